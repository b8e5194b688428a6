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

# Modes (exit codes 121-126 name the step that failed; 127 = program not found):
#   holder CGROUPS RLIMITS MOUNT_TARGET MOUNT_SOURCE MOUNT_OPTS UID -- BWRAP_ARGV...
#       join cgroups, set rlimits, new private mount namespace with a tmpfs at MOUNT_TARGET, drop to UID, exec.
#   enter CGROUPS RLIMITS PID UID -- ARGV...
#       join cgroups, set rlimits, enter PID's namespaces, root and cwd, fork (pid namespace), drop to UID, exec;
#       the parent waits and exits the way the child did.
# CGROUPS: comma-separated cgroup.procs paths or "-"; RLIMITS: comma-separated RESOURCE:VALUE or "-".
SOURCE = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(int code, const char *what) {
    dprintf(2, "benchbed-spawn: %s: %s\n", what, strerror(errno));
    _exit(code);
}

static void join_cgroups(char *list) {
    if (strcmp(list, "-") == 0) return;
    char pid[32]; int n = snprintf(pid, sizeof pid, "%d", getpid());
    for (char *p = strtok(list, ","); p; p = strtok(NULL, ",")) {
        int fd = open(p, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, pid, n) != n) die(121, p);
        close(fd);
    }
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

static void drop_to(uid_t uid) {
    if (setresgid(uid, uid, uid) != 0) die(124, "setresgid");
    if (setresuid(uid, uid, uid) != 0) die(124, "setresuid");
}

static void run(char **argv) {
    execvp(argv[0], argv);
    dprintf(2, "benchbed-spawn: %s: %s\n", argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
}

int main(int argc, char **argv) {
    int sep = 0;
    for (int i = 1; i < argc; i++) if (strcmp(argv[i], "--") == 0) { sep = i; break; }
    if (sep == 0 || sep + 1 >= argc || argc < 4) {
        dprintf(2, "usage: benchbed-spawn holder|enter CGROUPS RLIMITS ... -- argv\n");
        return 2;
    }
    char **cmd = argv + sep + 1;
    join_cgroups(argv[2]);
    set_rlimits(argv[3]);
    if (strcmp(argv[1], "holder") == 0 && sep == 8) {
        if (unshare(CLONE_NEWNS) != 0) die(123, "unshare");
        if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die(123, "make-private");
        if (mount(argv[5], argv[4], "tmpfs", MS_NOSUID | MS_NODEV, argv[6]) != 0) die(123, "mount tmpfs");
        if (setgroups(0, NULL) != 0) die(124, "setgroups");
        drop_to((uid_t)strtoul(argv[7], NULL, 10));
        run(cmd);
    }
    if (strcmp(argv[1], "enter") == 0 && sep == 6) {
        /* As nsenter does: everything else first while still privileged on the host, the user namespace last. */
        static const char *kinds[] = { "cgroup", "ipc", "uts", "net", "pid", "mnt", "user" };
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
        if (setgroups(0, NULL) != 0) die(124, "setgroups");
        for (int i = 0; i < 7; i++) if (setns(fds[i], 0) != 0) die(125, kinds[i]);
        if (fchdir(rootfd) != 0 || chroot(".") != 0 || fchdir(cwdfd) != 0) die(125, "root/cwd");
        pid_t child = fork();
        if (child < 0) die(125, "fork");
        if (child == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            drop_to((uid_t)strtoul(argv[5], NULL, 10));
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
            run(cmd);
        }
        int status;
        while (waitpid(child, &status, 0) < 0) if (errno != EINTR) die(125, "waitpid");
        if (WIFEXITED(status)) return WEXITSTATUS(status);
        signal(WTERMSIG(status), SIG_DFL);
        kill(getpid(), WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    dprintf(2, "benchbed-spawn: bad arguments for mode %s\n", argv[1]);
    return 2;
}
"""


def build(cache: Path = CACHE) -> tuple[Path | None, str]:
    """The compiled helper (built on first use), or None and why not."""
    digest = hashlib.sha256(SOURCE.encode()).hexdigest()[:16]
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
        out = subprocess.run([compiler, "-O2", "-o", str(tmp), str(src)], capture_output=True, text=True, timeout=60)
        src.unlink(missing_ok=True)
        if out.returncode != 0:
            return None, f"building the spawn helper failed: {out.stderr.strip()[:300]}"
        tmp.chmod(0o755)
        tmp.rename(binary)
        for old in cache.glob("spawn-*"):  # builds of earlier helper sources (a running one keeps its inode)
            if old != binary:
                old.unlink(missing_ok=True)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"building the spawn helper failed: {exc}"
    return binary, ""
