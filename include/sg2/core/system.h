#pragma once
// Facts about the process and machine: memory, host name, time formatting, and
// parsing of index lists such as "0-63,100".

#include <cstdint>
#include <string>
#include <vector>

namespace sg2 {

// OpenBLAS's own thread pool (libopenblas0-pthread) oversubscribes the cores LibTorch already
// parallelises over with OpenMP: its threads spin in sched_yield against the OpenMP team. Sets it to
// one thread unless OPENBLAS_NUM_THREADS is set; no-op when OpenBLAS is not loaded. Returns whether
// it changed anything.
bool limit_blas_threads();

// Debian 12's OpenBLAS (0.3.21) runs its SkylakeX or Cooperlake kernels on AVX-512 CPUs, and their
// float32 products leave the reference's parity tolerance (the parity fixtures' gradients off by up
// to 4e-3 relative where its Haswell kernels stay within 1e-4). Whether this process has them: every
// program of the project then starts itself again, before main(), with OPENBLAS_CORETYPE=Haswell
// (openblas_guard.cpp); a user's own OPENBLAS_CORETYPE is respected.
bool openblas_kernels_known_inexact();

double peak_rss_gib();     // peak resident set size of this process
double process_cpu_seconds();  // user + system CPU time of this process so far, all its threads
double current_rss_gib();  // resident set size now
std::string hostname();  // this machine's host name ("?" where it cannot be read)
std::vector<std::string> own_command_line();  // argv of this process (/proc/self/cmdline; empty where unreadable)
std::string own_executable();  // this program's file (/proc/self/exe), resolved; empty where unreadable
double unix_time();  // seconds since the epoch (wall clock), for timestamps in logs and files

// "1 channel", "3 channels": a count and its noun, plural with an s where the count is not 1.
std::string counted(int64_t count, const std::string& noun);

// "12s", "3m 04s", "2h 05m 06s", "1d 02h 03m" (as the reference's status lines).
std::string format_duration(double seconds);

// "0-3,7,10-11" -> {0,1,2,3,7,10,11}; errors name `what` and the bad item, and a list of more
// than `max_entries` is an error before anything is expanded.
std::vector<int64_t> parse_index_list(const std::string& text, const std::string& what,
                                      int64_t max_entries = 1'000'000);

// SIGINT and SIGTERM set a flag instead of ending the process (a second one ends it at once); long
// loops check stop_requested() at safe points, e.g. to write a snapshot before exiting.
void install_stop_signal_handlers();
bool stop_requested();
int stop_signal();  // the signal number received, 0 if none
// Forgets a received stop signal (a process that dealt with it and goes on, e.g. a test).
void clear_stop_signal();

}  // namespace sg2
