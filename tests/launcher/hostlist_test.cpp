#include "rtrace/launcher/hostlist.hpp"

#include <gtest/gtest.h>

using namespace rtrace::launcher;
using V = std::vector<std::string>;

TEST(LauncherHostlist, ExpandsSlurmNodeLists) {
  EXPECT_EQ(expand_hostlist("node1"), (V{"node1"}));
  EXPECT_EQ(expand_hostlist("node[1-3]"), (V{"node1", "node2", "node3"}));
  EXPECT_EQ(expand_hostlist("node[1-2,7],gpu[08-10]"), (V{"node1", "node2", "node7", "gpu08", "gpu09", "gpu10"}));
  EXPECT_EQ(expand_hostlist("a,b-c"), (V{"a", "b-c"}));
  EXPECT_EQ(expand_hostlist("r[1-2]n[1-2]"), (V{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(expand_hostlist("nid[0009-0011]x"), (V{"nid0009x", "nid0010x", "nid0011x"}));
  EXPECT_TRUE(expand_hostlist("").empty());
}

TEST(LauncherHostlist, MalformedListsNameTheBadPart) {
  auto error = [](const std::string& list) {
    try {
      expand_hostlist(list);
    } catch (const HostlistError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("node[1-3"), "host list `node[1-3`: `[` without `]`");
  EXPECT_EQ(error("node[3-1]"), "host list `node[3-1]`: range `3-1` in `node[3-1]` is empty");
  EXPECT_EQ(error("node[a]"), "host list `node[a]`: `a` in `node[a]` is not a number or a range N-M");
  EXPECT_EQ(error("a,,b"), "host list `a,,b`: empty name (two commas in a row, or one at either end)");
  EXPECT_EQ(error("node1]"), "host list `node1]`: `]` without `[`");
}

TEST(LauncherHostlist, TasksPerNodeOfTheAllocation) {
  EXPECT_EQ(allocation_tasks_per_node("4", "4(x2)"), 4);
  EXPECT_EQ(allocation_tasks_per_node("", "2(x3),1"), 2);
  EXPECT_EQ(allocation_tasks_per_node("", ""), 0);
  EXPECT_EQ(allocation_tasks_per_node("x", "y"), 0);
  EXPECT_EQ(join_hosts({"a", "b", "c"}, 2), "a,b");
}
