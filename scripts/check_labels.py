#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check the fence pairing labels against their legends and the docs.

Usage: scripts/check_labels.py [--root DIR] [--drop-legend LABEL] [-v]

Every fence, ordered atomic and grace-period wait in src/ and include/
carries a comment with a pairing label <MODULE>-<letters><digit?>['],
e.g. RCU-G1, SRCU-D, CB-C2', WK-K2, RH-M3, SEQ-W1, RB-R2, EL-SL1 (see
docs/CONTRIBUTING.md, "Fences and their labels").  Each module has one
legend in its internal header (MODULES below).  A legend is a block of a
comment that starts at a line naming "<MODULE>-*" and the word "legend",
and ends at a blank comment line or the end of the comment; a line of it
that starts with "Litmus" starts the list of litmus tests of the pairs,
whose lines are no entries (and no uses).  An entry of the legend is a line of the block that
starts (after the "*" and some blanks) with the module's label, or a list
of labels joined by ',' or '/', followed by a blank, '(' or the end of
the line.

The check fails, listing each problem, when
  - a label used in a comment of src/ or include/ (outside the legend
    blocks) is not an entry of its module's legend;
  - a legend entry is used in no comment outside the legend blocks;
  - a label used in the code is in no table row ('|' lines) of its
    module's docs pages;
  - a label named anywhere in docs/*.md or README.md is used in no code;
  - a label has a prefix that names no module;
  - a litmus file named in a comment of src/ or include/ is not in
    litmus/;
  - a comment in src/ or include/ names a bare label (R1, W2, SL1)
    without a module prefix.

--drop-legend LABEL checks as if LABEL's entry were missing from its
legend (the twin of the CTest uses a copy of the tree instead; this is
for a quick look).  Exit status: 0 clean, 1 problems found, 2 usage.
"""
import os
import re
import sys

# Module prefix -> (legend files, docs pages whose tables list the labels).
MODULES = {
    "RCU": (["src/internal/rcu.h"], ["docs/rcu.md"]),
    "SRCU": (["src/internal/srcu.h"], ["docs/srcu.md"]),
    "CB": (["src/internal/cbq.h", "src/internal/rcu_cb.h"], ["docs/rcu.md"]),
    "WK": (["src/internal/worker.h"], ["docs/rcu.md", "docs/srcu.md"]),
    "RH": (["src/internal/rhash.h"], ["docs/data-structures.md"]),
    "SEQ": (["src/internal/seqlock.h"], ["docs/locks.md"]),
    "RB": (["src/internal/rwlock_rb.h"], ["docs/locks.md"]),
    "EL": (["src/internal/elide.h"], ["docs/elision.md"]),
}

CODE_DIRS = ["src", "include"]
DOC_FILES_DIR = "docs"
EXTRA_DOCS = ["README.md"]

LABEL = r"[A-Z]{2,4}-[A-Z]{1,2}[0-9]?'?(?![A-Za-z0-9_'])"
LABEL_RE = re.compile(r"(?<![A-Za-z0-9_-])" + LABEL)
# A bare label: one or two capitals and a digit, no prefix.  Words that
# look like one but are not labels are listed.
BARE_RE = re.compile(r"(?<![A-Za-z0-9_\-.'/])([A-Z]{1,2}[0-9])(?![A-Za-z0-9_])")
BARE_OK = {"C11", "C99", "L1", "L2", "L3", "P0", "P1", "P2", "P3",
           "T0", "T1", "T2", "T3", "X1", "X86"}
LITMUS_RE = re.compile(r"([A-Za-z0-9+_.-]+\.litmus)\b")


def comments(text):
    """Yield (line number, comment line, last line of its comment?) for
    every line of every comment."""
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            line = text.count("\n", 0, i) + 1
            parts = text[i + 2:j].split("\n")
            for k, part in enumerate(parts):
                yield line + k, part, k == len(parts) - 1
            i = j + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            yield text.count("\n", 0, i) + 1, text[i + 2:j], True
            i = j
        else:
            i += 1


def prefix(label):
    return label.split("-", 1)[0]


def legend_blocks(lines):
    """Yield (module, [(lineno, text, in_litmus_list)], state) for each
    legend block of a file."""
    block = None
    for lineno, text, end in lines:
        if block is not None:
            body = text.strip().lstrip("*").strip()
            if not body:
                yield block
                block = None
            else:
                if body.startswith("Litmus"):
                    block[2][0] = True
                # The lines of a litmus list belong to the block (they
                # are no use of a label) but are no entries.
                block[1].append((lineno, text, block[2][0]))
                if end:
                    yield block
                    block = None
                continue
        m = re.search(r"\b([A-Z]{2,4})-\*", text)
        if m and re.search(r"legend", text, re.I) and m.group(1) in MODULES:
            block = (m.group(1), [], [False])
        elif text.strip().lstrip("*").strip().startswith("Litmus"):
            # A list of litmus tests after the legend's blank line.
            block = (None, [(lineno, text, True)], [True])
        if block is not None and end:
            yield block
            block = None
    if block is not None:
        yield block


ENTRY_RE = re.compile(r"^\s*\*?\s+(" + LABEL + r"(?:\s*[,/]\s*" + LABEL
                      + r")*)(?=\s|\(|$)")


def main(argv):
    root = "."
    drop = None
    verbose = False
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--root" and args:
            root = args.pop(0)
        elif a == "--drop-legend" and args:
            drop = args.pop(0)
        elif a == "-v":
            verbose = True
        else:
            print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
            return 2

    problems = []
    used = {}      # label -> first "file:line" of a use in code comments
    legend = {}    # label -> "file:line" of its legend entry
    in_legend = set()  # (file, line) of legend block lines
    litmus_named = {}
    bare = []

    legend_files = {f for files, _ in MODULES.values() for f in files}
    code_files = []
    for d in CODE_DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    code_files.append(os.path.join(dirpath, name))
    code_files.sort()

    for path in code_files:
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        clines = list(comments(text))
        if rel in legend_files:
            for mod, block, _ in legend_blocks(clines):
                owner = [m for m, (files, _) in MODULES.items()
                         if rel in files]
                if mod is not None and mod not in owner:
                    problems.append("%s: a legend of %s-* labels outside "
                                    "that module's legend files %s"
                                    % (rel, mod, MODULES[mod][0]))
                for lineno, part, litmus in block:
                    in_legend.add((rel, lineno))
                    m = None if litmus else ENTRY_RE.match(part)
                    if not m:
                        continue
                    for lab in LABEL_RE.findall(m.group(1)):
                        if prefix(lab) != mod or lab == drop:
                            continue
                        legend.setdefault(lab, "%s:%d" % (rel, lineno))
        for lineno, part, _ in clines:
            for name in LITMUS_RE.findall(part):
                litmus_named.setdefault(name, "%s:%d" % (rel, lineno))
            for b in BARE_RE.findall(part):
                if b not in BARE_OK:
                    bare.append("%s:%d: bare label %s (no module prefix): %s"
                                % (rel, lineno, b, part.strip()))
            if (rel, lineno) in in_legend:
                continue
            for lab in LABEL_RE.findall(part):
                used.setdefault(lab, "%s:%d" % (rel, lineno))

    docs = {}       # docs page -> set of labels in its table rows
    doc_named = {}  # label -> first "file:line" in any doc
    doc_paths = []
    ddir = os.path.join(root, DOC_FILES_DIR)
    if os.path.isdir(ddir):
        doc_paths += [os.path.join(DOC_FILES_DIR, n)
                      for n in sorted(os.listdir(ddir)) if n.endswith(".md")]
    doc_paths += [p for p in EXTRA_DOCS if os.path.exists(os.path.join(root, p))]
    for rel in doc_paths:
        rows = set()
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                labs = [l for l in LABEL_RE.findall(line)
                        if prefix(l) in MODULES]
                for lab in labs:
                    doc_named.setdefault(lab, "%s:%d" % (rel, lineno))
                if line.lstrip().startswith("|"):
                    rows.update(labs)
        docs[rel] = rows

    for lab, where in sorted(used.items()):
        mod = prefix(lab)
        if mod not in MODULES:
            problems.append("%s: %s: unknown module prefix %s- (known: %s)"
                            % (where, lab, mod, ", ".join(sorted(MODULES))))
            continue
        files, pages = MODULES[mod]
        if lab not in legend:
            problems.append("%s: %s is missing from the legend in %s"
                            % (where, lab, " or ".join(files)))
        if not any(lab in docs.get(p, ()) for p in pages):
            problems.append("%s: %s is in no table of %s"
                            % (where, lab, " or ".join(pages)))
    for lab, where in sorted(legend.items()):
        if lab not in used:
            problems.append("%s: legend entry %s is used in no code comment"
                            % (where, lab))
    for lab, where in sorted(doc_named.items()):
        if lab not in used:
            problems.append("%s: %s (in the docs) is used in no code comment"
                            % (where, lab))
    for name, where in sorted(litmus_named.items()):
        if not os.path.exists(os.path.join(root, "litmus", name)):
            problems.append("%s: litmus file %s is not in litmus/"
                            % (where, name))
    problems += bare

    if verbose or problems:
        print("labels: %d used in code, %d in legends, %d named in docs, "
              "%d litmus files named" % (len(used), len(legend),
                                         len(doc_named), len(litmus_named)))
    for p in problems:
        print(p)
    if problems:
        print("check_labels: %d problem(s); see docs/CONTRIBUTING.md, "
              "\"Fences and their labels\"" % len(problems))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
