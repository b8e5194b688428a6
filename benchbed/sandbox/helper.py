"""A tiny C helper that replaces the shell chains around bubblewrap and nsenter (sh, unshare, mount, setpriv):
one exec instead of five per sandbox start and two per command. Compiled once per host with the system C
compiler into /run/benchbed; without a compiler the local backend keeps the shell chains (doctor says so)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

CACHE = Path("/run/benchbed")
BUILD = "cc -O2, -static when libc.a is there"  # in the cache key with the source: new flags, new build

# Modes (exit codes 121-126 name the step that failed; 127 = program not found):
#   holder CGROUPS RLIMITS MOUNT_TARGET MOUNT_SOURCE MOUNT_OPTS UID -- BWRAP_ARGV...
#       set rlimits, join cgroups, new private mount namespace with a tmpfs at MOUNT_TARGET, drop to UID, exec.
#   enter CGROUPS RLIMITS PID UID -- ARGV...
#       set rlimits, enter PID's pid namespace, join cgroups, enter PID's other namespaces, root and cwd, drop to
#       UID, exec; the process that runs ARGV is a child, and the first process waits and exits the way it did.
#   wait
#       the sandbox's payload (run from an fd, /proc/self/fd/N, so no host path is bound in): close every fd but
#       0-2, print "R" (ready), block until stdin is closed. Static, it starts without loading a libc.
# CGROUPS: comma-separated cgroup directories or "-"; RLIMITS: comma-separated RESOURCE:VALUE or "-".
# Joining never migrates a process with cgroup.procs, which takes the kernel's global threadgroup lock and waits
# out an RCU grace period (5-20 ms): a v1 directory is joined by writing "0" (this thread; the helper has one) to
# its `tasks`, and the v2 directory by starting the child in it with clone3(CLONE_INTO_CGROUP).
SOURCE = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define CGROUP2_MAGIC 0x63677270
#define INTO_CGROUP 0x200000000ULL
#define MAX_V1 8

struct clone3_args { uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
                     set_tid_size, cgroup; };

static void die(int code, const char *what) {
    dprintf(2, "benchbed-spawn: %s: %s\n", what, strerror(errno));
    _exit(code);
}

/* Open each cgroup directory now (its path may not be visible later): v1 `tasks` files into v1[], v2 dir fd. */
static int open_cgroups(char *list, int v1[MAX_V1], int *v2) {
    int n = 0;
    *v2 = -1;
    if (strcmp(list, "-") == 0) return 0;
    for (char *p = strtok(list, ","); p; p = strtok(NULL, ",")) {
        int dir = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct statfs fs;
        if (dir < 0 || fstatfs(dir, &fs) != 0) die(121, p);
        if (fs.f_type == CGROUP2_MAGIC && *v2 < 0) { *v2 = dir; continue; }
        if (fs.f_type == CGROUP2_MAGIC || n == MAX_V1) { errno = EINVAL; die(121, p); }
        if ((v1[n++] = openat(dir, "tasks", O_WRONLY | O_CLOEXEC)) < 0) die(121, p);
        close(dir);
    }
    return n;
}

static void join_v1(const int *v1, int n) {
    for (int i = 0; i < n; i++) {
        if (write(v1[i], "0", 1) != 1) die(121, "tasks");
        close(v1[i]);
    }
}

static void exit_as(pid_t child) {
    int status;
    while (waitpid(child, &status, 0) < 0) if (errno != EINTR) die(125, "waitpid");
    if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
    signal(WTERMSIG(status), SIG_DFL);
    kill(getpid(), WTERMSIG(status));
    _exit(128 + WTERMSIG(status));
}

/* Continue in a child started inside the v2 cgroup (v2 >= 0) or, with `always`, in a plain child; the first process
   dies with its parent, waits, and exits the way the child did. Kernels before clone3 migrate the process instead.
   Returns the pid (as the continuing process sees it) whose death that process must not outlive. */
static pid_t fork_into(int v2, int always) {
    if (v2 < 0 && !always) return getppid();
    pid_t parent = getpid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) die(125, "pdeathsig");
    struct clone3_args args = { .flags = v2 >= 0 ? INTO_CGROUP : 0, .exit_signal = SIGCHLD,
                                .cgroup = v2 >= 0 ? (uint64_t)v2 : 0 };
    long child = syscall(SYS_clone3, &args, sizeof args);
    if (child < 0 && (errno == ENOSYS || errno == E2BIG || (errno == EINVAL && v2 >= 0))) {
        if (v2 >= 0) {
            int fd = openat(v2, "cgroup.procs", O_WRONLY | O_CLOEXEC);
            if (fd < 0 || write(fd, "0", 1) != 1) die(121, "cgroup.procs");
            close(fd);
        }
        child = fork();
    }
    if (child < 0) die(125, "clone3");
    if (child > 0) exit_as((pid_t)child);
    if (v2 >= 0) close(v2);
    return parent;
}

static void set_rlimits(char *list) {
    if (strcmp(list, "-") == 0) return;
    for (char *p = strtok(list, ","); p; p = strtok(NULL, ",")) {
        int res; unsigned long long v;
        if (sscanf(p, "%d:%llu", &res, &v) != 2) { errno = EINVAL; die(122, p); }
        struct rlimit rl = { v, v };
        if (setrlimit(res, &rl) != 0) die(122, p);
    }
}

/* Drop to the sandbox uid, then ask for SIGKILL when the parent dies (a uid change clears that setting). */
static void drop_to(uid_t uid, pid_t parent) {
    if (setresgid(uid, uid, uid) != 0) die(124, "setresgid");
    if (setresuid(uid, uid, uid) != 0) die(124, "setresuid");
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) die(124, "pdeathsig");
    if (getppid() != parent) _exit(137);
}

static void run(char **argv) {
    execvp(argv[0], argv);
    dprintf(2, "benchbed-spawn: %s: %s\n", argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "wait") == 0) {
        char buf[64];
        if (syscall(SYS_close_range, 3, ~0U, 0) != 0) for (int fd = 3; fd < 1024; fd++) close(fd);
        if (write(1, "R\n", 2) != 2) return 1;
        for (;;) {
            ssize_t n = read(0, buf, sizeof buf);
            if (n == 0 || (n < 0 && errno != EINTR)) return 0;
        }
    }
    int sep = 0;
    for (int i = 1; i < argc; i++) if (strcmp(argv[i], "--") == 0) { sep = i; break; }
    if (sep == 0 || sep + 1 >= argc || argc < 4) {
        dprintf(2, "usage: benchbed-spawn holder|enter CGROUPS RLIMITS ... -- argv\n");
        return 2;
    }
    char **cmd = argv + sep + 1;
    int v1[MAX_V1], v2, n_v1;
    set_rlimits(argv[3]);
    if (strcmp(argv[1], "holder") == 0 && sep == 8) {
        n_v1 = open_cgroups(argv[2], v1, &v2);
        pid_t parent = fork_into(v2, 0);
        join_v1(v1, n_v1);
        if (unshare(CLONE_NEWNS) != 0) die(123, "unshare");
        if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die(123, "make-private");
        if (mount(argv[5], argv[4], "tmpfs", MS_NOSUID | MS_NODEV, argv[6]) != 0) die(123, "mount tmpfs");
        if (setgroups(0, NULL) != 0) die(124, "setgroups");
        drop_to((uid_t)strtoul(argv[7], NULL, 10), parent);
        run(cmd);
    }
    if (strcmp(argv[1], "enter") == 0 && sep == 6) {
        /* As nsenter does: everything else first while still privileged on the host, the user namespace last;
           the pid namespace first, so that the child started in the cgroup is inside it. */
        static const char *kinds[] = { "pid", "cgroup", "ipc", "uts", "net", "mnt", "user" };
        int fds[7], rootfd, cwdfd; char path[64];
        const char *target = argv[4];
        for (int i = 0; i < 7; i++) {
            snprintf(path, sizeof path, "/proc/%s/ns/%s", target, kinds[i]);
            if ((fds[i] = open(path, O_RDONLY | O_CLOEXEC)) < 0) die(125, path);
        }
        snprintf(path, sizeof path, "/proc/%s/root", target);
        if ((rootfd = open(path, O_RDONLY | O_CLOEXEC)) < 0) die(125, path);
        snprintf(path, sizeof path, "/proc/%s/cwd", target);
        if ((cwdfd = open(path, O_RDONLY | O_CLOEXEC)) < 0) die(125, path);
        n_v1 = open_cgroups(argv[2], v1, &v2);
        if (setns(fds[0], 0) != 0) die(125, kinds[0]);
        fork_into(v2, 1);
        pid_t parent = 0; /* what getppid() says of a parent outside the child's pid namespace */
        join_v1(v1, n_v1);
        if (setgroups(0, NULL) != 0) die(124, "setgroups");
        for (int i = 1; i < 7; i++) if (setns(fds[i], 0) != 0) die(125, kinds[i]);
        if (fchdir(rootfd) != 0 || chroot(".") != 0 || fchdir(cwdfd) != 0) die(125, "root/cwd");
        drop_to((uid_t)strtoul(argv[5], NULL, 10), parent);
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        run(cmd);
    }
    dprintf(2, "benchbed-spawn: bad arguments for mode %s\n", argv[1]);
    return 2;
}
"""


def build(cache: Path = CACHE) -> tuple[Path | None, str]:
    """The compiled helper (built on first use), or None and why not."""
    digest = hashlib.sha256((BUILD + SOURCE).encode()).hexdigest()[:16]
    binary = cache / f"spawn-{digest}"
    if binary.exists() and os.access(binary, os.X_OK):
        return binary, ""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None, "no C compiler (cc): the helper cannot be built, using sh/unshare/mount/nsenter chains (slower)"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        src = cache / f".spawn-{digest}-{os.getpid()}.c"
        tmp = cache / f".spawn-{digest}-{os.getpid()}"
        src.write_text(SOURCE)
        # Static when libc.a is there: no dynamic loading on each sandbox start and exec (~0.5 ms each).
        for static in (["-static"], []):
            out = subprocess.run([compiler, "-O2", *static, "-o", str(tmp), str(src)], capture_output=True, text=True,
                                 timeout=60)  # fmt: skip
            if out.returncode == 0:
                break
        src.unlink(missing_ok=True)
        if out.returncode != 0:
            return None, f"building the spawn helper failed: {out.stderr.strip()[:300]}"
        tmp.chmod(0o755)
        tmp.rename(binary)  # builds of other helper sources stay: a running harness may still exec them
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"building the spawn helper failed: {exc}"
    return binary, ""
