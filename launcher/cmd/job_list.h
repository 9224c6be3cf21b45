// `dslaunch status --all`: one line per job of this user, running or ended,
// newest first: its id, dslaunch's pid, when it started, its state, its exit
// code, how long it ran, its world size and restarts, and its command. Pure formatting; the
// caller (status_cmd.cc) finds the jobs and their views.
#pragma once

#include <ctime>
#include <string>
#include <vector>

#include "launcher/report/job_view.h"

namespace ds {

struct JobListEntry {
  JobView view;
  bool live = false;    // answered on its socket (else read from its record)
  time_t started = 0;   // wall clock, seconds (the record's, else the view's time less its elapsed)
  std::string command;  // the worker command as a shell would read it; "" = not known (a running job)
};

// The table, a header line first; "" for no entries. Times in UTC.
std::string JobListTable(const std::vector<JobListEntry>& jobs);

}  // namespace ds
