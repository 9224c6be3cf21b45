#include "launcher/cmd/attach_service.h"

#include "launcher/coordinator/job_view_builder.h"
#include "launcher/report/attach_history.h"
#include "launcher/report/job_summary.h"
#include "wire/attach_file.h"
#include "wire/hmac_auth.h"
#include "wire/wire_format.h"

namespace ds {

AttachService::AttachService(Coordinator& coord, const JobRecord& record, LogMux& mux, const std::string& secret,
                             std::string leader)
    : coord_(coord), record_(record), mux_(mux), key_(AttachKey(secret)), leader_(std::move(leader)),
      coordinators_{coord.address()} {
  Result<PrivateDir> dir = OpenPrivateDir();
  if (dir.ok()) dir_ = std::move(dir).value();
  else mux_.Notice("dslaunch: warning: no attach file on this host: " + dir.status().message());
  WriteFile();
  mux_.Follow(&hub_);
  coord_.OnAttach([this](std::shared_ptr<FrameConn> conn) {
    const JobView view = BuildJobView(coord_.control(), record_, RealClock().Now());
    std::vector<std::string> about;
    if (!leader_.empty()) about.push_back(leader_);
    if (!coord_.control().takeover().empty()) about.push_back(coord_.control().takeover());
    hub_.Add(std::move(conn), {AttachHistory(view, record_.restart_causes(), about), coordinators_});
  });
}

AttachService::~AttachService() {
  mux_.Follow(nullptr);
  RemoveFile();
}

void AttachService::RemoveFile() {
  if (dir_) RemoveAttachFile(*dir_, coord_.control().options().job_id, wire::kAttachLeaderNode);
}

void AttachService::SetCoordinators(std::vector<std::string> addresses) {
  if (addresses.empty() || addresses == coordinators_) return;
  coordinators_ = std::move(addresses);
  WriteFile();
}

void AttachService::End() {
  hub_.End(record_.ExitCode(), FormatSummary(record_, coord_.control().world_size(), /*color=*/false));
}

void AttachService::WriteFile() {
  if (!dir_) return;
  Status st = WriteAttachFile(*dir_, {coord_.control().options().job_id, wire::kAttachLeaderNode, key_, coordinators_});
  if (!st.ok()) mux_.Notice("dslaunch: warning: no attach file on this host: " + st.message());
}

}  // namespace ds
