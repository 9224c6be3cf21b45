// DS_CHECK: invariants. A failed check prints file:line and the condition to
// stderr and aborts; it is for programming errors, never for bad user input
// (that is a Status).
#pragma once

#include <cstdio>
#include <cstdlib>

#define DS_CHECK(cond)                                                        \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,   \
                   #cond);                                                    \
      std::abort();                                                           \
    }                                                                         \
  } while (0)

#define DS_CHECK_MSG(cond, msg)                                               \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__,        \
                   __LINE__, #cond, (msg));                                   \
      std::abort();                                                           \
    }                                                                         \
  } while (0)
