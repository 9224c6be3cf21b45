// PyTorch's error file (TORCHELASTIC_ERROR_FILE): what a worker decorated
// with torch.distributed.elastic's @record writes when it raises, as
// written by torch/distributed/elastic/multiprocessing/errors/error_handler.py:
//   {"message": {"message": "ValueError: boom",
//                "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "..."},
//                "errorCode": 1}}
// or with "message" a plain string (errors recorded outside Python). Pure
// functions on text: the parser never throws and never trusts the input
// (size, nesting and types are checked); the agent reads the file, the
// summary formats the frames. Thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ds {

constexpr size_t kMaxErrorFileBytes = 1 << 20;   // a larger file is not read
constexpr size_t kMaxErrorMessage = 2 * 1024;    // WorkerExited.error_message: the head
constexpr size_t kMaxErrorTrace = 4 * 1024;      // WorkerExited.error_trace: the tail
constexpr int kMaxErrorFileDepth = 32;           // deeper JSON nesting is rejected unparsed

struct TorchError {
  std::string message;    // "ValueError: boom"; never empty
  std::string traceback;  // extraInfo.py_callstack; "" when absent
};

// The error in `text`, or nullopt when it is not a JSON object with a
// non-empty string at "message" or "message"."message" (malformed, too big,
// too deep, wrong types). Never throws.
std::optional<TorchError> ParseTorchErrorFile(std::string_view text);

// What goes on the wire: the message cut to its first kMaxErrorMessage bytes
// and the traceback to its last kMaxErrorTrace bytes starting at a line,
// neither splitting a UTF-8 sequence.
TorchError BoundForWire(TorchError e);

// One frame of a Python traceback.
struct TraceFrame {
  std::string location;  // File "/x/train.py", line 12, in step
  std::string source;    // raise ValueError("boom")  ("" when not shown)
};

// The last `n` frames of a Python traceback (of its last exception when
// chained), innermost last; caret lines (^^^) are skipped. Empty when the
// text shows no frame.
std::vector<TraceFrame> LastFrames(std::string_view traceback, size_t n);

}  // namespace ds
