// common/torch_error_file: PyTorch's @record format, real-looking samples
// and hostile ones (huge, deep, wrong types, not JSON); bounding for the
// wire; the innermost frames of a traceback.
#include "common/torch_error_file.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

namespace ds {
namespace {

const char kTrace[] =
    "Traceback (most recent call last):\n"
    "  File \"/work/train.py\", line 40, in <module>\n"
    "    main()\n"
    "  File \"/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py\", "
    "line 355, in wrapper\n"
    "    return f(*args, **kwargs)\n"
    "           ^^^^^^^^^^^^^^^^^^\n"
    "  File \"/work/train.py\", line 31, in main\n"
    "    step(model, batch)\n"
    "  File \"/work/train.py\", line 12, in step\n"
    "    raise ValueError(\"boom\")\n"
    "ValueError: boom\n";

std::string RecordJson(const std::string& message, const std::string& trace) {
  nlohmann::json j;
  j["message"]["message"] = message;
  j["message"]["extraInfo"]["py_callstack"] = trace;
  j["message"]["extraInfo"]["timestamp"] = "1714000000";
  return j.dump();
}

TEST_CASE("torch error file: what @record writes", "[torch]") {
  auto e = ParseTorchErrorFile(RecordJson("ValueError: boom", kTrace));
  REQUIRE(e);
  CHECK(e->message == "ValueError: boom");
  CHECK(e->traceback == kTrace);
}

TEST_CASE("torch error file: a plain string message, an errorCode, extra keys", "[torch]") {
  auto e = ParseTorchErrorFile(R"({"message": "NCCL error: unhandled system error", "errorCode": 1})");
  REQUIRE(e);
  CHECK(e->message == "NCCL error: unhandled system error");
  CHECK(e->traceback.empty());
  e = ParseTorchErrorFile(
      R"({"message": {"message": "RuntimeError: x", "errorCode": 7, "extraInfo": {"timestamp": "1"}}, "other": [1]})");
  REQUIRE(e);
  CHECK(e->message == "RuntimeError: x");
  CHECK(e->traceback.empty());
}

TEST_CASE("torch error file: wrong types and missing keys are no message", "[torch]") {
  for (const char* text : {R"({})", R"([])", R"("message")", R"({"message": 3})", R"({"message": null})",
                           R"({"message": {"message": ["a"]}})", R"({"message": {"extraInfo": {}}})",
                           R"({"message": ""})", R"({"message": "   "})", R"({"Message": "x"})"}) {
    INFO(text);
    CHECK_FALSE(ParseTorchErrorFile(text));
  }
  // A traceback of the wrong type is dropped, the message kept.
  auto e = ParseTorchErrorFile(R"({"message": {"message": "E: x", "extraInfo": {"py_callstack": 5}}})");
  REQUIRE(e);
  CHECK(e->traceback.empty());
  e = ParseTorchErrorFile(R"({"message": {"message": "E: x", "extraInfo": "flat"}})");
  REQUIRE(e);
}

TEST_CASE("torch error file: not JSON, truncated, binary, never throws", "[torch]") {
  for (std::string text : {std::string(""), std::string("not json"), std::string("{\"message\": \"x\""),
                           std::string("{\"message\": \"x\"} trailing"), std::string("\xff\xfe\x00\x01", 4),
                           std::string("{\"message\": \"\xc3\x28\"}")}) {
    CHECK_NOTHROW(ParseTorchErrorFile(text));
    CHECK_FALSE(ParseTorchErrorFile(text));
  }
}

TEST_CASE("torch error file: deep nesting and huge input are refused unparsed", "[torch]") {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_FALSE(ParseTorchErrorFile(deep));
  std::string deep_obj = "{\"message\": \"E\", \"x\": " + std::string(50, '[') + std::string(50, ']') + "}";
  CHECK_FALSE(ParseTorchErrorFile(deep_obj));
  // Brackets inside strings do not count.
  CHECK(ParseTorchErrorFile("{\"message\": \"" + std::string(1000, '[') + "\"}"));
  std::string huge = RecordJson("E: big", std::string(kMaxErrorFileBytes, 'x'));
  CHECK_FALSE(ParseTorchErrorFile(huge));
}

TEST_CASE("torch error file: bounded for the wire, head of the message, tail of the trace at a line", "[torch]") {
  TorchError e;
  e.message = std::string(kMaxErrorMessage - 1, 'm') + "\xc3\xa9" + "rest";  // é across the cut
  std::string trace;
  for (int i = 0; i < 500; ++i) trace += "  File \"/x.py\", line " + std::to_string(i) + ", in f\n    g()\n";
  e.traceback = trace;
  TorchError b = BoundForWire(e);
  CHECK(b.message == std::string(kMaxErrorMessage - 1, 'm'));
  CHECK(b.traceback.size() <= kMaxErrorTrace);
  REQUIRE(b.traceback.size() > kMaxErrorTrace / 2);
  CHECK(trace[trace.size() - b.traceback.size() - 1] == '\n');  // starts at a whole line
  CHECK(trace.compare(trace.size() - b.traceback.size(), b.traceback.size(), b.traceback) == 0);
  TorchError small{"E: x", "t"};
  CHECK(BoundForWire(small).message == "E: x");
  CHECK(BoundForWire(small).traceback == "t");
}

TEST_CASE("traceback: the innermost frames with their source lines, carets skipped", "[torch]") {
  auto frames = LastFrames(kTrace, 3);
  REQUIRE(frames.size() == 3);
  CHECK(frames[0].location ==
        "File \"/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py\", "
        "line 355, in wrapper");
  CHECK(frames[0].source == "return f(*args, **kwargs)");
  CHECK(frames[1].location == "File \"/work/train.py\", line 31, in main");
  CHECK(frames[1].source == "step(model, batch)");
  CHECK(frames[2].location == "File \"/work/train.py\", line 12, in step");
  CHECK(frames[2].source == "raise ValueError(\"boom\")");
  CHECK(LastFrames(kTrace, 10).size() == 4);
  CHECK(LastFrames("", 3).empty());
  CHECK(LastFrames("just text\nno frames", 3).empty());
}

TEST_CASE("traceback: a chained exception shows the last exception's frames; no source line is fine",
          "[torch]") {
  std::string chained =
      "Traceback (most recent call last):\n"
      "  File \"a.py\", line 1, in f\n"
      "    x()\n"
      "KeyError: 'k'\n\n"
      "During handling of the above exception, another exception occurred:\n\n"
      "Traceback (most recent call last):\n"
      "  File \"<string>\", line 3, in g\n"
      "  File \"b.py\", line 9, in h\n"
      "    raise RuntimeError('wrapped')\n"
      "RuntimeError: wrapped\n";
  auto frames = LastFrames(chained, 3);
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].location == "File \"<string>\", line 3, in g");
  CHECK(frames[0].source.empty());
  CHECK(frames[1].location == "File \"b.py\", line 9, in h");
}

}  // namespace
}  // namespace ds
