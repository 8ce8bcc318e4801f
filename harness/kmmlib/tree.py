"""build/linux: the base tree as a git repository with the series on top.

The base is Debian's linux-source-6.12 tarball, committed once on branch
"base". The series is patches/series (quilt format) followed by the new
in-tree files of this repo (the overlay). Each refresh builds the series
commits in a private index, then moves the work tree to them with a two-tree
read-tree, so only files whose content changed are rewritten and an
incremental kernel build stays incremental.
"""

import os
import subprocess
import tarfile
import shutil

from .common import (BASE_TARBALL, BUILD, OVERLAY_ROOTS, REPO, TREE,
                     base_info, die, ensure_dir, run, say)

PATCHES = os.path.join(REPO, "patches")
SERIES = os.path.join(PATCHES, "series")
BRANCH = "kmmscand"
IDENT = {"GIT_AUTHOR_NAME": "kmmscand developers",
         "GIT_AUTHOR_EMAIL": "kmmscand@localhost",
         "GIT_COMMITTER_NAME": "kmmscand developers",
         "GIT_COMMITTER_EMAIL": "kmmscand@localhost",
         # Fixed dates make the same series produce the same commit ids.
         "GIT_AUTHOR_DATE": "2024-12-01T00:00:00Z",
         "GIT_COMMITTER_DATE": "2024-12-01T00:00:00Z"}


def git(*args, env=None, capture=True, check=True, cwd=TREE):
    full = dict(os.environ)
    full.update(IDENT)
    if env:
        full.update(env)
    res = subprocess.run(["git", *args], cwd=cwd, env=full, text=True,
                         capture_output=capture, check=False)
    if check and res.returncode != 0:
        die(f"git {' '.join(args)} failed in {cwd}:\n{res.stderr.strip()}")
    return res.stdout.strip() if capture else ""


def series_patches():
    """Patch file names from patches/series, in order (quilt format)."""
    if not os.path.exists(SERIES):
        return []
    names = []
    with open(SERIES, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name = line.split()[0]
            if not os.path.exists(os.path.join(PATCHES, name)):
                die(f"patches/series names {name}, but patches/{name} does not exist")
            names.append(name)
    return names


def overlay_files():
    """The repo's new in-tree kernel files (tracked or not, never ignored)."""
    res = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "--",
                          *OVERLAY_ROOTS], cwd=REPO, capture_output=True,
                         text=True, check=True)
    return sorted(p for p in res.stdout.split("\n")
                  if p and os.path.isfile(os.path.join(REPO, p)))


def patch_subject(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("Subject:"):
                subj = line[len("Subject:"):].strip()
                if subj.startswith("[PATCH"):
                    subj = subj.split("]", 1)[-1].strip()
                return subj
    return os.path.basename(path)


def patch_message(path):
    """The patch's header (everything before the diff) as a commit message."""
    lines = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("---") or line.startswith("diff --git") or \
               line.startswith("Index: "):
                break
            lines.append(line)
    body = [l for l in lines if not l.startswith(("Subject:", "From:", "Date:"))]
    text = patch_subject(path) + "\n\n" + "".join(body).strip() + "\n"
    return text


def extract_base():
    if not os.path.exists(BASE_TARBALL):
        die(f"{BASE_TARBALL} is missing: run `make deps` "
            "(apt-get install linux-source-6.12)")
    info = base_info()
    tmp = TREE + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    ensure_dir(tmp)
    say(f"extracting {BASE_TARBALL} ({info['package_version']})")
    with tarfile.open(BASE_TARBALL) as tar:
        top = tar.next().name.split("/")[0]
        run(["tar", "-xJf", BASE_TARBALL, "-C", tmp], what="extracting the base")
    os.rename(os.path.join(tmp, top), TREE)
    shutil.rmtree(tmp, ignore_errors=True)
    info = base_info()
    say(f"committing the base tree (Linux {info['kernel']})")
    git("init", "-q", "-b", "base")
    # The base is 80k loose objects: an automatic gc would repack them in
    # the background, competing with the kernel build for the CPUs.
    git("config", "gc.auto", "0")
    # Debian's .gitignore ignores the top level (it is its packaging
    # repository's); -f tracks the tree as shipped, byte for byte.
    git("add", "-A", "-f")
    git("commit", "-q", "-m",
        f"Linux {info['kernel']} (Debian {info['package']} {info['package_version']})")
    git("tag", "kmm-base")
    with open(os.path.join(TREE, ".git", "kmm-base"), "w", encoding="utf-8") as f:
        f.write(info["package_version"] + "\n")


def base_matches_package():
    marker = os.path.join(TREE, ".git", "kmm-base")
    if not os.path.exists(marker):
        return False
    with open(marker, encoding="utf-8") as f:
        return f.read().strip() == base_info()["package_version"]


def ensure_base():
    if os.path.isdir(os.path.join(TREE, ".git")) and base_matches_package():
        return
    if os.path.isdir(TREE):
        say(f"{TREE} is not the current {base_info()['package_version']} base; "
            "re-creating it")
        shutil.rmtree(TREE)
    extract_base()


def work_tree_dirty():
    return git("status", "--porcelain", "--untracked-files=no")


def build_series_commits():
    """Commit the series onto the base in a private index; return the tip."""
    index = os.path.join(TREE, ".git", "kmm-index")
    env = {"GIT_INDEX_FILE": index}
    if os.path.exists(index):
        os.remove(index)
    git("read-tree", "kmm-base", env=env)
    parent = git("rev-parse", "kmm-base")
    for name in series_patches():
        path = os.path.join(PATCHES, name)
        res = subprocess.run(["git", "apply", "--cached", "-p1", path],
                             cwd=TREE, env={**os.environ, **env},
                             capture_output=True, text=True, check=False)
        if res.returncode != 0:
            files = [l.split("patch failed:")[-1].strip()
                     for l in res.stderr.splitlines() if "patch failed" in l]
            where = f" to {', '.join(files)}" if files else ""
            die(f"patch {name} does not apply{where} on "
                f"{base_info()['package_version']}:\n{res.stderr.strip()}")
        tree = git("write-tree", env=env)
        with open(os.path.join(TREE, ".git", "kmm-msg"), "w", encoding="utf-8") as f:
            f.write(patch_message(path))
        parent = git("commit-tree", tree, "-p", parent, "-F",
                     os.path.join(TREE, ".git", "kmm-msg"), env=env)
    files = overlay_files()
    if files:
        for rel in files:
            sha = git("hash-object", "-w", os.path.join(REPO, rel))
            mode = "100755" if os.access(os.path.join(REPO, rel), os.X_OK) else "100644"
            git("update-index", "--add", "--cacheinfo", f"{mode},{sha},{rel}",
                env=env)
        tree = git("write-tree", env=env)
        parent = git("commit-tree", tree, "-p", parent, "-m",
                     "kmmscand: new in-tree files\n\n" + "\n".join(files), env=env)
    os.remove(index)
    return parent


def refresh(force=False):
    """Make build/linux hold base + series; rewrite only changed files."""
    ensure_base()
    tip = build_series_commits()
    head = git("rev-parse", "HEAD")
    if head == tip:
        return tip
    dirty = work_tree_dirty()
    if dirty and not force:
        die(f"{TREE} has local changes the refresh would overwrite:\n{dirty}\n"
            "  move them into the repo (new files or patches/), or run "
            "`make tree FORCE=1` to discard them")
    if dirty:
        git("reset", "-q", "--hard", "HEAD")
    # Two-tree merge: only paths that differ between HEAD and tip are touched.
    git("read-tree", "-m", "-u", head, tip)
    git("update-ref", f"refs/heads/{BRANCH}", tip)
    git("symbolic-ref", "HEAD", f"refs/heads/{BRANCH}")
    git("reset", "-q", "--mixed", tip)
    n = len(series_patches())
    say(f"build/linux: {base_info()['package_version']} + {n} patches + "
        f"{len(overlay_files())} new files at {tip[:12]}")
    return tip
