#pragma once
#include <cstdlib>
#include <string>
#include <unistd.h>

// A fresh temporary directory per test, removed at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/rtrace-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::string cmd = "rm -rf '" + path + "'";
    if (std::system(cmd.c_str()) != 0) {}
  }
  std::string file(const std::string& name) const { return path + "/" + name; }
};
