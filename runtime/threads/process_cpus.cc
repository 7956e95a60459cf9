#include "runtime/threads/process_cpus.h"

#include <dirent.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "runtime/threads/omp_backend.h"

namespace w4jit::internal {
namespace {

// Why a union of several sources and not one of them:
//  - sched_getaffinity(0) (and /proc/self/status, which shows the initial
//    thread) report one thread's mask, and that is exactly what a runtime
//    pins: under OMP_PROC_BIND it is one CPU before any w4jit code runs.
//  - A constructor of w4jit runs after those of its dependencies (libgomp
//    among them) and after a host's libraries loaded earlier, so the mask
//    it reads is already pinned in the case that matters; it still helps
//    when w4jit loads first (python importing w4jit before torch).
//  - The threads' union covers a host runtime whose team exists (pinned
//    one per place), not one that has not started its threads yet.
//  - OpenMP's places are built from the mask libgomp read before pinning;
//    they are the one record of it that survives, for the runtime w4jit
//    links. Another OpenMP runtime in the process (Intel's) is covered by
//    the threads' union once its team has run.
// None of these widens the set past what the process was given: a
// `taskset`, `numactl --physcpubind` or cgroup cpuset restricts every
// source alike.

std::vector<int> SetToVector(const cpu_set_t& set) {
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

std::vector<int>& LoadTimeCpus() {
  static std::vector<int> cpus;
  return cpus;
}

__attribute__((constructor)) void ReadLoadTimeCpus() {
  LoadTimeCpus() = ThreadCpus();
}

// The Cpus_allowed_list of every thread of the process.
void AddThreadMasks(std::vector<int>* cpus) {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream status(std::string("/proc/self/task/") + e->d_name +
                         "/status");
    std::string line;
    while (std::getline(status, line)) {
      static constexpr char kKey[] = "Cpus_allowed_list:";
      if (line.compare(0, sizeof kKey - 1, kKey) != 0) continue;
      size_t at = sizeof kKey - 1;
      while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
      (void)ParseCpuList(line.c_str() + at, cpus);
      break;
    }
  }
  closedir(dir);
}

std::vector<int> Compute() {
  std::vector<int> cpus = LoadTimeCpus();
  const std::vector<int> self = ThreadCpus();
  cpus.insert(cpus.end(), self.begin(), self.end());
  AddThreadMasks(&cpus);
  const std::vector<int> places = OpenMpPlaceCpus();
  cpus.insert(cpus.end(), places.begin(), places.end());
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  if (cpus.empty()) {
    const unsigned hw = std::thread::hardware_concurrency();
    for (unsigned c = 0; c < std::max(1u, hw); ++c) {
      cpus.push_back(static_cast<int>(c));
    }
  }
  return cpus;
}

}  // namespace

std::vector<int> ThreadCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {};
  return SetToVector(set);
}

bool ParseCpuList(const char* list, std::vector<int>* cpus) {
  const char* p = list;
  while (*p != '\0' && *p != '\n') {
    char* end = nullptr;
    errno = 0;
    const long lo = std::strtol(p, &end, 10);
    if (end == p || errno != 0 || lo < 0 || lo >= CPU_SETSIZE) return false;
    long hi = lo;
    p = end;
    if (*p == '-') {
      hi = std::strtol(p + 1, &end, 10);
      if (end == p + 1 || errno != 0 || hi < lo || hi >= CPU_SETSIZE) {
        return false;
      }
      p = end;
    }
    for (long c = lo; c <= hi; ++c) cpus->push_back(static_cast<int>(c));
    if (*p == ',') {
      ++p;
    } else if (*p != '\0' && *p != '\n') {
      return false;
    }
  }
  return true;
}

const std::vector<int>& ProcessCpus() {
  static const std::vector<int>* cpus = new std::vector<int>(Compute());
  return *cpus;
}

}  // namespace w4jit::internal
