"""build/linux: the base tree as a git repository with the series on top.

The base is Debian's linux-source-X.Y tarball (common.BASE_PACKAGE),
committed once on branch "base". On top of it, one commit per patch of
patches/series (quilt format).
Each refresh builds the series commits in a private index, then moves the
work tree to them with a two-tree read-tree, so only files whose content
changed are rewritten and an incremental kernel build stays incremental.

New files (files the base lacks: mm/kmmscand.c, ...) live in the repo at
their in-tree paths in their FINAL state, which is the source of truth.
To keep the series bisectable they still enter it patch by patch:

- patches/new-files names, for each new file, the one patch that
  introduces it ("patch-name.patch: path path ..."). That patch carries no
  hunk to the file; its commit adds the file as it is after that patch.
- A later patch may carry ordinary hunks to a new file (a feature that
  changes mm/kmmscand.c). The file's state after each patch is derived by
  walking the series backwards from the repo's file and reverse-applying
  those hunks (new_file_states()). A hunk that does not reverse-apply stops
  the refresh, naming the patch and the file.
- A patch before the introducing one may not touch the file.

So the last commit's tree is exactly base + patches + the repo's new files,
and every earlier commit holds the new files as they were at that point.
A new file that no patch claims is added by a last commit "kmmscand: new
in-tree files not yet in the series" (with a warning); `make series-check`
refuses it.
"""

import os
import subprocess
import tarfile
import tempfile
import shutil

from .common import (BASE_PACKAGE, BASE_TARBALL, OVERLAY_ROOTS, REPO, TREE,
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


def git(*args, env=None, capture=True, check=True, cwd=TREE, input_bytes=None):
    full = dict(os.environ)
    full.update(IDENT)
    if env:
        full.update(env)
    if input_bytes is not None:
        res = subprocess.run(["git", *args], cwd=cwd, env=full,
                             input=input_bytes, capture_output=True,
                             check=False)
        if check and res.returncode != 0:
            die(f"git {' '.join(args)} failed in {cwd}:\n"
                f"{res.stderr.decode(errors='replace').strip()}")
        return res.stdout.decode().strip()
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
    body = [line for line in lines
            if not line.startswith(("Subject:", "From:", "Date:"))]
    text = patch_subject(path) + "\n\n" + "".join(body).strip() + "\n"
    return text


def extract_base():
    if not os.path.exists(BASE_TARBALL):
        die(f"{BASE_TARBALL} is missing: run `make deps` "
            f"(it installs {BASE_PACKAGE})")
    info = base_info()
    tmp = TREE + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    ensure_dir(tmp)
    say(f"extracting {BASE_TARBALL} ({info['package_version']})")
    with tarfile.open(BASE_TARBALL) as tar:
        first = tar.next()
        if first is None:
            die(f"{BASE_TARBALL} is empty")
        top = first.name.split("/")[0]
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


NEW_FILES = os.path.join(PATCHES, "new-files")


def new_file_claims():
    """{path: patch name} from patches/new-files ("patch: path path ...")."""
    claims: dict[str, str] = {}
    if not os.path.exists(NEW_FILES):
        return claims
    names = set(series_patches())
    with open(NEW_FILES, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, sep, paths = line.partition(":")
            name = name.strip()
            if not sep or not paths.split():
                die(f"patches/new-files:{n}: expected 'patch-name.patch: path ...'")
            if name not in names:
                die(f"patches/new-files:{n}: {name} is not in patches/series")
            for rel in paths.split():
                if rel in claims:
                    die(f"patches/new-files: {rel} is introduced by both "
                        f"{claims[rel]} and {name}")
                if not os.path.isfile(os.path.join(REPO, rel)):
                    die(f"patches/new-files:{n}: {rel} does not exist in the repo")
                claims[rel] = name
    return claims


def patch_paths(name):
    """The paths a patch file has hunks for (its "+++ b/" or "--- a/" lines)."""
    paths = set()
    with open(os.path.join(PATCHES, name), encoding="utf-8",
              errors="replace") as f:
        for line in f:
            if line.startswith(("+++ b/", "--- a/")):
                paths.add(line[6:].rstrip("\n").split("\t")[0])
    return paths


def reverse_apply(name, rel, text):
    """Undo patch NAME's hunks to REL on TEXT (the file after NAME)."""
    with tempfile.TemporaryDirectory(prefix="kmm-rev-") as tmp:
        path = os.path.join(tmp, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(text)
        res = subprocess.run(["git", "apply", "-R", "-p1", f"--include={rel}",
                              os.path.join(PATCHES, name)], cwd=tmp,
                             capture_output=True, text=True, check=False)
        if res.returncode != 0:
            die(f"patch {name}: its hunks to the new file {rel} do not "
                f"reverse-apply to {rel} as the later patches leave it (the "
                f"repo's {rel}, their hunks undone):\n{res.stderr.strip()}\n"
                "  regenerate the patch's hunks to that file from the "
                "file's current state")
        with open(path, "rb") as f:
            return f.read()


def new_file_states(names, claims):
    """{index in names: {path: content after that patch}} for new files.

    Each file starts from the repo's (final) content and walks the series
    backwards: a patch after the introducing one that has hunks to it
    gets the current content, and its hunks are undone for the patches
    before; the introducing patch gets what is left.
    """
    states: dict[int, dict[str, bytes]] = {}
    for rel, intro in sorted(claims.items()):
        with open(os.path.join(REPO, rel), "rb") as f:
            text = f.read()
        first = names.index(intro)
        for i in range(len(names) - 1, -1, -1):
            touches = rel in patch_paths(names[i])
            if i > first and touches:
                states.setdefault(i, {})[rel] = text
                text = reverse_apply(names[i], rel, text)
            elif i == first:
                if touches:
                    die(f"patch {intro} introduces {rel} (patches/new-files) "
                        "and must not carry hunks to it")
                states.setdefault(i, {})[rel] = text
            elif i < first and touches:
                die(f"patch {names[i]} changes {rel}, which {intro} only "
                    "introduces later (patches/new-files)")
    return states


def stage_file(rel, content, env):
    """Put CONTENT at REL in the private index, with the repo file's mode."""
    sha = git("hash-object", "-w", "--stdin", input_bytes=content)
    mode = "100755" if os.access(os.path.join(REPO, rel), os.X_OK) else "100644"
    git("update-index", "--add", "--cacheinfo", f"{mode},{sha},{rel}", env=env)


def apply_upstream_hunks(name, skip, env):
    """Apply patch NAME's hunks to files of the base (not to SKIP)."""
    excludes = [f"--exclude={rel}" for rel in sorted(skip)]
    res = subprocess.run(["git", "apply", "--cached", "-p1", *excludes,
                          os.path.join(PATCHES, name)],
                         cwd=TREE, env={**os.environ, **env},
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        files = [line.split("patch failed:")[-1].strip()
                 for line in res.stderr.splitlines() if "patch failed" in line]
        where = f" to {', '.join(files)}" if files else ""
        die(f"patch {name} does not apply{where} on "
            f"{base_info()['package_version']}:\n{res.stderr.strip()}")


def build_series_commits():
    """Commit the series onto the base in a private index; return the tip."""
    index = os.path.join(TREE, ".git", "kmm-index")
    env = {"GIT_INDEX_FILE": index}
    if os.path.exists(index):
        os.remove(index)
    git("read-tree", "kmm-base", env=env)
    parent = git("rev-parse", "kmm-base")
    names = series_patches()
    claims = new_file_claims()
    states = new_file_states(names, claims)
    for i, name in enumerate(names):
        path = os.path.join(PATCHES, name)
        apply_upstream_hunks(name, claims.keys(), env)
        for rel, content in sorted(states.get(i, {}).items()):
            stage_file(rel, content, env)
        tree = git("write-tree", env=env)
        with open(os.path.join(TREE, ".git", "kmm-msg"), "w", encoding="utf-8") as f:
            f.write(patch_message(path))
        parent = git("commit-tree", tree, "-p", parent, "-F",
                     os.path.join(TREE, ".git", "kmm-msg"), env=env)
    files = [rel for rel in overlay_files() if rel not in claims]
    if files:
        say("warning: new files no patch introduces (add them to "
            f"patches/new-files): {', '.join(files)}")
        for rel in files:
            with open(os.path.join(REPO, rel), "rb") as f:
                stage_file(rel, f.read(), env)
        tree = git("write-tree", env=env)
        parent = git("commit-tree", tree, "-p", parent, "-m",
                     "kmmscand: new in-tree files not yet in the series\n\n"
                     + "\n".join(files), env=env)
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
