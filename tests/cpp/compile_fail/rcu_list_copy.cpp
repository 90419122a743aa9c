// SPDX-License-Identifier: MIT
// sk::rcu_list cannot be copied: it is intrusive, its elements' links
// point at its head.
// SK_CF_EXPECT: deleted
#include <scalekit/list.hpp>

struct item {
	int value;
	sk_list_head link;
};

int main()
{
	sk::rcu_list<item, &item::link> list;
#ifndef SK_CF_OK
	sk::rcu_list<item, &item::link> copy(list);
#endif
	return list.empty() ? 0 : 1;
}
