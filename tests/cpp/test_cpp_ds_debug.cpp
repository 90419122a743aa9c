// SPDX-License-Identifier: MIT
//
// test_cpp_ds_debug.cpp - with SK_DEBUG >= 1, the readers' members of
// sk::rcu_list and sk::rhash (begin(), operator*, operator++, find())
// print one message naming the call and the thread, then abort, when the
// calling thread is outside an RCU read-side critical section.
//
// This file compiles itself with SK_DEBUG 1 whatever the build's level, so
// that the checks are tested in every build (the other translation units
// of the program instantiate none of these templates).
//
// Each misuse runs in a forked child, whose death by SIGABRT and whose
// message the parent checks (sk_test_expect_abort()); a control does the
// same calls inside a section and must exit 0, silent.  The parent starts
// no thread (TSan refuses threads in children of a threaded fork).
#undef SK_DEBUG
#define SK_DEBUG 1

#include <cstdint>
#include <cstring>

#include "scalekit/list.hpp"
#include "scalekit/rhash.hpp"
#include "sk_test.hpp"

namespace {

struct item {
	std::uint64_t key;
	sk_list_head link{};
	sk_rhash_node node{};
};

using list_t = sk::rcu_list<item, &item::link>;
using table_t = sk::rhash<item, &item::node, &item::key>;

// Set up by main() before any fork: a list and a table of two items.
item items[2] = { { 1 }, { 2 } };
list_t *the_list;
table_t *the_table;

constexpr unsigned hang_s = 120; // a hang guard, not a time bound
constexpr const char *outside = "outside an RCU read-side critical section";

// A list iterator made inside a section, used after it ended.
list_t::iterator stale_list_iterator()
{
	sk_rcu_read_lock();
	list_t::iterator it = the_list->begin();
	sk_rcu_read_unlock();
	return it;
}

table_t::iterator stale_table_iterator()
{
	sk_rcu_read_lock();
	table_t::iterator it = the_table->begin();
	sk_rcu_read_unlock();
	return it;
}

void list_increment(void)
{
	list_t::iterator it = stale_list_iterator();

	++it;
}

void list_dereference(void)
{
	list_t::iterator it = stale_list_iterator();

	(void)it->key;
}

void list_begin(void)
{
	(void)the_list->begin();
}

void table_find(void)
{
	(void)the_table->find(1);
}

void table_increment(void)
{
	table_t::iterator it = stale_table_iterator();

	++it;
}

void table_dereference(void)
{
	table_t::iterator it = stale_table_iterator();

	(void)(*it).key;
}

void table_begin(void)
{
	(void)the_table->begin();
}

void list_misuse_aborts(void)
{
	sk_test_expect_abort(list_increment, hang_s,
			     "sk::rcu_list iterator operator++", outside);
	sk_test_expect_abort(list_dereference, hang_s,
			     "sk::rcu_list iterator operator*", outside);
	sk_test_expect_abort(list_begin, hang_s, "sk::rcu_list::begin()",
			     outside);
}

void rhash_misuse_aborts(void)
{
	sk_test_expect_abort(table_find, hang_s, "sk::rhash::find()", outside);
	sk_test_expect_abort(table_increment, hang_s,
			     "sk::rhash iterator operator++", outside);
	sk_test_expect_abort(table_dereference, hang_s,
			     "sk::rhash iterator operator*", outside);
	sk_test_expect_abort(table_begin, hang_s, "sk::rhash::begin()",
			     outside);
}

// The same calls inside a section: no message, no abort.
void correct_use(void)
{
	std::uint64_t sum = 0;

	sk_rcu_read_lock();
	for (const item &it : *the_list)
		sum += it.key;
	for (const item &it : *the_table)
		sum += it.key;
	if (const item *it = the_table->find(2))
		sum += it->key;
	sk_rcu_read_unlock();
	if (sum != 8)
		std::abort();
}

void message_names_thread_and_control_lives(void)
{
	struct sk_test_child c;
	char tid[64];

	sk_test_fork_child(list_increment, hang_s, 1, &c);
	SK_CHECK_ABORTED(c.status);
	std::snprintf(tid, sizeof(tid), "scalekit: thread %d: ", (int)c.pid);
	SK_CHECK_STR_CONTAINS(c.err, tid);
	SK_CHECK_EQ(sk_test_count_substr(c.err, "scalekit: "), 1);

	sk_test_fork_child(correct_use, hang_s, 1, &c);
	SK_CHECK_EXIT_0(c.status);
	SK_CHECK_EQ(std::strlen(c.err), 0);
}

} // namespace

int main(int argc, char **argv)
{
	sk_test_args(argc, argv);
	sk_test_seed_init();
	list_t list;
	table_t table;

	the_list = &list;
	the_table = &table;
	for (item &it : items) {
		list.push_back(it);
		SK_CHECK_EQ(table.insert(it), 0);
	}
	SK_RUN(list_misuse_aborts);
	SK_RUN(rhash_misuse_aborts);
	SK_RUN(message_names_thread_and_control_lives);
	for (item &it : items) {
		list.erase(it);
		SK_CHECK_EQ(table.erase(it), 0);
	}
	sk_synchronize_rcu();
	return sk_test_report();
}
