// OutputLines (agent/workers/output_lines.h): what the agent relays of a worker pipe
// that writes carriage-return updates, fed byte chunks as a pipe delivers them.
#include "agent/workers/output_lines.h"

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

namespace ds {
namespace {

// What one OutputLines emitted: ("line", text) or ("progress", text).
struct Fed {
  OutputLines lines;
  std::vector<std::pair<std::string, std::string>> got;
  OutputLines::Sink Sink() {
    return [this](const std::string& text, bool progress) { got.emplace_back(progress ? "progress" : "line", text); };
  }
  void Append(std::string_view bytes) { lines.Append(bytes, Sink()); }
  void Finish() { lines.Finish(Sink()); }
};

using Got = std::vector<std::pair<std::string, std::string>>;

TEST_CASE("VisibleText: the text after the last carriage return that has text after it") {
  CHECK(VisibleText("plain") == "plain");
  CHECK(VisibleText("\r 10%\r 11%") == " 11%");
  CHECK(VisibleText("done\r") == "done");  // "\r\n" line ends
  CHECK(VisibleText("a\rb\r\r") == "b");
  CHECK(VisibleText("\r\r") == "");
  CHECK(VisibleText("") == "");
}

TEST_CASE("OutputLines: a complete line with updates is sent collapsed; plain lines unchanged") {
  Fed f;
  f.Append("first\n\r 10%|#\r 50%|#####\r100%|##########\nCRLF line\r\nlast");
  f.Finish();
  CHECK(f.got == Got{{"line", "first"},
                     {"line", "100%|##########"},
                     {"line", "CRLF line"},
                     {"line", "last"}});
}

TEST_CASE("OutputLines: the line in progress is sent as an update each time what it shows changes") {
  Fed f;
  f.Append("epoch 1\n\r 10%");
  f.Append("|#");        // the same update, grown
  f.Append("\r 20%|##");
  f.Append("\r");        // a lone '\r' shows nothing new
  f.Append("\r 20%|##");  // the same text again: nothing sent
  f.Append("\n");
  CHECK(f.got == Got{{"line", "epoch 1"},
                     {"progress", " 10%"},
                     {"progress", " 10%|#"},
                     {"progress", " 20%|##"},
                     {"line", " 20%|##"}});
}

TEST_CASE("OutputLines: a line without '\\r' is never an update, nor is a '\\r' that ends a chunk before '\\n'") {
  Fed f;
  f.Append("no newline yet");
  f.Append(" still\r");
  f.Append("\nnext");
  CHECK(f.got == Got{{"line", "no newline yet still"}});
  f.Finish();
  CHECK(f.got.back() == std::make_pair(std::string("line"), std::string("next")));
}

TEST_CASE("OutputLines: a pipe that ends inside updates gives the visible text as its last line") {
  Fed f;
  f.Append("\r1%\r2%");
  f.Finish();
  CHECK(f.got == Got{{"progress", "2%"}, {"line", "2%"}});
  f.Finish();  // nothing left
  CHECK(f.got.size() == 2);
}

TEST_CASE("OutputLines: a million updates without a newline keep the buffer at one update") {
  Fed f;
  for (int i = 0; i < 1000000; ++i) f.Append("\r" + std::to_string(i) + "%\r\r");
  CHECK(f.lines.buffered() <= std::string("\r999999%\r").size());
  f.Append("\n");
  CHECK(f.got.back() == std::make_pair(std::string("line"), std::string("999999%")));
}

TEST_CASE("OutputLines: without updates, lines are sent exactly as written") {
  Fed f;
  f.lines = OutputLines(false);
  f.Append("\033]0;x\007\rforged\r\n\r 1%");
  f.Finish();
  CHECK(f.got == Got{{"line", "\033]0;x\007\rforged\r"}, {"line", "\r 1%"}});
}

TEST_CASE("OutputLines: a line longer than kMaxOutputLine is split into lines of that length") {
  Fed f;
  f.Append(std::string(kMaxOutputLine + 10, 'x'));
  REQUIRE(f.got.size() == 1);
  CHECK(f.got[0].second.size() == kMaxOutputLine);
  CHECK(f.lines.buffered() == 10);
}

}  // namespace
}  // namespace ds
