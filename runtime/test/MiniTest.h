//===- MiniTest.h - The GoogleTest subset the GPU tests use -----*- C++ -*-===//
//
// Part of the GradComm project.
//
// The GPU tests must build on the GPU machine, which has no GoogleTest (see
// bench/gpu/run.sh), so they use this header instead: TEST, EXPECT_/ASSERT_
// EQ, NE, TRUE, FALSE with streamed context, ::testing::TempDir(), and a
// RUN_ALL_TESTS() that runs every test, prints each failure with its file
// and line, ends with one "N passed, N failed" line and returns 1 when any
// test failed. Same spelling as GoogleTest, so a test reads the same either
// way. Self-tested by MiniTestSelfTest.cpp.
//
// MINITEST_LIST=1 prints each test's Suite.Name and runs none;
// MINITEST_FILTER=Suite.Name[:Suite.Name...] runs only those. Together they
// let bench/gpu/run.sh rerun each test in its own process when one crashes
// (a CUDA fault poisons the process's context, and every later test with it).
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_TEST_MINITEST_H
#define GRADCOMM_RUNTIME_TEST_MINITEST_H

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace minitest {

struct TestCase {
  const char *suite;
  const char *name;
  void (*body)();
};

inline std::vector<TestCase> &registry() {
  static std::vector<TestCase> tests;
  return tests;
}

/// Failures seen in the running test.
inline int &failures() {
  static int count = 0;
  return count;
}

struct Registrar {
  Registrar(const char *suite, const char *name, void (*body)()) {
    registry().push_back({suite, name, body});
  }
};

template <typename T, typename = void> struct Printable : std::false_type {};
template <typename T>
struct Printable<T, std::void_t<decltype(std::declval<std::ostream &>()
                                         << std::declval<const T &>())>>
    : std::true_type {};

template <typename T> std::string show(const T &value) {
  if constexpr (Printable<T>::value) {
    std::ostringstream text;
    text << value;
    return text.str();
  } else {
    return "(a value that cannot be printed)";
  }
}

/// Empty when a == b, else what differs.
template <typename A, typename B>
std::string compareEqual(const char *textA, const char *textB, const A &a,
                         const B &b) {
  if (a == b)
    return {};
  return std::string(textA) + " == " + textB + " failed: " + show(a) + " vs " +
         show(b);
}

/// Vectors: the size, or the first element that differs.
template <typename T>
std::string compareEqual(const char *textA, const char *textB,
                         const std::vector<T> &a, const std::vector<T> &b) {
  std::string what = std::string(textA) + " == " + textB + " failed: ";
  if (a.size() != b.size())
    return what + "sizes " + std::to_string(a.size()) + " vs " +
           std::to_string(b.size());
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i]))
      return what + "first difference at [" + std::to_string(i) +
             "]: " + show(a[i]) + " vs " + show(b[i]);
  return {};
}

/// One failed check: prints itself (with what the test streamed into it)
/// when the statement ends, and counts.
class Failure {
public:
  Failure(const char *file, int line, std::string what)
      : file(file), line(line), what(std::move(what)) {}
  Failure(const Failure &) = delete;
  template <typename T> Failure &operator<<(const T &value) {
    context << value;
    return *this;
  }
  ~Failure() {
    std::string extra = context.str();
    std::printf("%s:%d: failure: %s%s%s\n", file, line, what.c_str(),
                extra.empty() ? "" : "\n  context: ", extra.c_str());
    ++failures();
  }

private:
  const char *file;
  int line;
  std::string what;
  std::ostringstream context;
};

/// `return Returning() = Failure(...) << ...;` ends a void test body.
struct Returning {
  void operator=(const Failure &) const {}
};

struct Counts {
  int passed = 0;
  int failed = 0;
};

/// What the last runAllTests() counted.
inline Counts &lastRun() {
  static Counts counts;
  return counts;
}

inline std::string fullName(const TestCase &test) {
  return std::string(test.suite) + "." + test.name;
}

/// Whether MINITEST_FILTER (unset: every test) names the test.
inline bool selected(const TestCase &test) {
  const char *filter = std::getenv("MINITEST_FILTER");
  if (!filter || !*filter)
    return true;
  std::string names = std::string(":") + filter + ":";
  return names.find(":" + fullName(test) + ":") != std::string::npos;
}

inline int runAllTests() {
  if (const char *list = std::getenv("MINITEST_LIST"); list && *list) {
    for (const TestCase &test : registry())
      std::printf("%s\n", fullName(test).c_str());
    return 0;
  }
  int passed = 0, failed = 0;
  for (const TestCase &test : registry()) {
    if (!selected(test))
      continue;
    std::printf("[ RUN      ] %s.%s\n", test.suite, test.name);
    std::fflush(stdout);
    failures() = 0;
    test.body();
    bool ok = failures() == 0;
    std::printf("[ %s ] %s.%s\n", ok ? "      OK" : " FAILED ", test.suite,
                test.name);
    ++(ok ? passed : failed);
  }
  lastRun() = {passed, failed};
  std::printf("%d passed, %d failed\n", passed, failed);
  std::fflush(stdout);
  return failed == 0 ? 0 : 1;
}

} // namespace minitest

namespace testing {
inline std::string TempDir() { return "/tmp/"; }
inline void InitGoogleTest(int *, char **) {}
} // namespace testing

#define RUN_ALL_TESTS() ::minitest::runAllTests()

#define TEST(suite, name)                                                      \
  static void minitest_##suite##_##name();                                     \
  static ::minitest::Registrar minitest_registrar_##suite##_##name(            \
      #suite, #name, minitest_##suite##_##name);                               \
  static void minitest_##suite##_##name()

// `switch (0) case 0: default:` keeps a caller's `if (x) EXPECT_...; else`
// from binding its else to the macro's if (as GoogleTest does).
#define MINITEST_CHECK(message, onFailure)                                     \
  switch (0)                                                                   \
  case 0:                                                                      \
  default:                                                                     \
    if (const std::string minitest_what = (message); minitest_what.empty())    \
      ;                                                                        \
    else                                                                       \
      onFailure ::minitest::Failure(__FILE__, __LINE__, minitest_what)

#define MINITEST_TRUTH(condition, expected, text)                              \
  (bool(condition) == (expected)                                               \
       ? std::string()                                                         \
       : std::string("expected ") + ((expected) ? "true" : "false") + ": " +   \
             (text))

#define EXPECT_EQ(a, b)                                                        \
  MINITEST_CHECK(::minitest::compareEqual(#a, #b, (a), (b)), )
#define ASSERT_EQ(a, b)                                                        \
  MINITEST_CHECK(::minitest::compareEqual(#a, #b, (a), (b)),                   \
                 return ::minitest::Returning() =)
#define EXPECT_NE(a, b)                                                        \
  MINITEST_CHECK((a) != (b) ? std::string()                                    \
                            : std::string(#a " != " #b " failed: both ") +     \
                                  ::minitest::show(a), )
#define EXPECT_TRUE(c) MINITEST_CHECK(MINITEST_TRUTH(c, true, #c), )
#define EXPECT_FALSE(c) MINITEST_CHECK(MINITEST_TRUTH(c, false, #c), )
#define ASSERT_TRUE(c)                                                         \
  MINITEST_CHECK(MINITEST_TRUTH(c, true, #c), return ::minitest::Returning() =)

#endif // GRADCOMM_RUNTIME_TEST_MINITEST_H
