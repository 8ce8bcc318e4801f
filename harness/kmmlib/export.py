"""Write the series back from a branch of build/linux: `kmm export REF`.

The inverse of `kmm tree`.  Reshaping the series (folding a fix-up into
the patch it fixes, reordering, rewording a changelog, moving a hunk to an
earlier patch) is a `git rebase -i kmm-base` in build/linux, or in a
scratch clone of it; `kmm export REF` then writes patches/ and the new
files from the commits of REF:

- each commit after kmm-base is one patch, in order (patches/series);
  its file is the patch of the same subject if there is one, otherwise a
  name made from the subject as git format-patch would;
- a file that a commit adds and the base does not have is a new file of
  the repo, introduced by that commit's patch (patches/new-files), which
  carries no hunk to it; later commits carry their hunks to it;
- the repo's new files get their content at REF;
- the patch files of subjects that are gone are removed.

The patch files are the commit messages (subject, body with its trailers)
and `git diff` of each commit; nothing is read from the old patch files
but their names.  `kmm tree` afterwards rebuilds exactly the tree of REF,
which export checks.
"""

import os
import re
import subprocess

from .common import REPO, TREE, die, say
from . import tree

AUTHOR = "kmmscand developers <kmmscand@localhost>"
# The commit `kmm tree` adds for new files that no patch introduces
UNCLAIMED = "kmmscand: new in-tree files not yet in the series"


def git(*args, cwd=TREE):
    res = subprocess.run(["git", *args], cwd=cwd, capture_output=True,
                         text=True, check=False)
    if res.returncode != 0:
        die(f"git {' '.join(args)} failed in {cwd}:\n{res.stderr.strip()}")
    return res.stdout


def slug(subject):
    """The file name git format-patch would give SUBJECT, without number."""
    name = re.sub(r"[^A-Za-z0-9._]+", "-", subject).strip("-._").lower()
    return name[:64].rstrip("-._") + ".patch"


def old_names():
    """{subject: patch file name} of the series as it is."""
    return {tree.patch_subject(os.path.join(tree.PATCHES, n)): n
            for n in tree.series_patches()}


def added_new_files(commit, base_files):
    """Paths COMMIT adds that the base does not have."""
    out = git("diff", "--name-status", "--no-renames", f"{commit}^", commit)
    added = []
    for line in out.splitlines():
        status, path = line.split("\t", 1)
        if status == "A" and path not in base_files:
            added.append(path)
        if status == "D" and path not in base_files:
            die(f"commit {commit[:12]} deletes the new file {path}: "
                "drop it from the commit that adds it instead")
    return added


def patch_text(commit, skip):
    """The patch file of COMMIT: its message and its diff, less SKIP."""
    subject = git("log", "-1", "--format=%s", commit).strip()
    body = git("log", "-1", "--format=%b", commit).strip()
    excludes = [f":(exclude){p}" for p in skip]
    diff = git("diff", "--no-color", "--no-renames", "--no-ext-diff",
               "--abbrev=9",
               f"{commit}^", commit, "--", ".", *excludes)
    return subject, (f"From: {AUTHOR}\nSubject: {subject}\n\n{body}\n---\n"
                     f"{diff}")


def check_not_stale(ref):
    """Refuse to export `kmm tree`'s own branch when the series changed
    since it was built: that would undo the changes.  Reshape on a
    branch of its own."""
    if git("rev-parse", "--symbolic-full-name", ref).strip() != \
            f"refs/heads/{tree.BRANCH}":
        return
    if git("rev-parse", f"{ref}^{{tree}}").strip() != \
            git("rev-parse", f"{tree.build_series_commits()}^{{tree}}").strip():
        die(f"{ref} is not the series as patches/ now has it: run "
            "`kmm tree` first, and reshape on a branch of its own "
            f"(git -C {TREE} switch -c reshape {tree.BRANCH})")


def export(ref):
    check_not_stale(ref)
    commits = git("rev-list", "--reverse", f"kmm-base..{ref}").split()
    if not commits:
        die(f"{ref} has no commit after kmm-base")
    if git("log", "-1", "--format=%s", commits[-1]).strip() == UNCLAIMED:
        die(f"{ref} ends with the commit of unclaimed new files: "
            "fold it into the commits that should introduce them")
    base_files = set(git("ls-tree", "-r", "--name-only", "kmm-base")
                     .splitlines())
    names = old_names()
    series, claims, used = [], {}, set()
    for c in commits:
        added = added_new_files(c, base_files)
        subject, text = patch_text(c, added)
        name = names.get(subject) or slug(subject)
        if name in used:
            die(f"two commits of {ref} would both be {name}: "
                "give them distinct subjects")
        used.add(name)
        with open(os.path.join(tree.PATCHES, name), "w",
                  encoding="utf-8") as f:
            f.write(text)
        series.append(name)
        for path in added:
            claims[path] = name

    final = set(git("ls-tree", "-r", "--name-only", ref).splitlines())
    for path in claims:
        if path not in final:
            die(f"{path} is added and later removed in {ref}")
        content = subprocess.run(["git", "show", f"{ref}:{path}"], cwd=TREE,
                                 capture_output=True, check=True).stdout
        dest = os.path.join(REPO, path)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as f:
            f.write(content)
        # Keep the mode the branch gives it (an executable script stays one)
        mode = git("ls-tree", ref, "--", path).split(None, 1)[0]
        os.chmod(dest, 0o755 if mode == "100755" else 0o644)
    gone = [n for n in names.values() if n not in used]
    for name in gone:
        os.remove(os.path.join(tree.PATCHES, name))

    with open(tree.SERIES, "w", encoding="utf-8") as f:
        f.write("".join(f"{n}\n" for n in series))
    by_patch: dict[str, list[str]] = {}
    for path, name in claims.items():
        by_patch.setdefault(name, []).append(path)
    with open(tree.NEW_FILES, "w", encoding="utf-8") as f:
        for name in series:
            if name in by_patch:
                f.write(f"{name}: {' '.join(sorted(by_patch[name]))}\n")

    tip = tree.build_series_commits()
    want = git("rev-parse", f"{ref}^{{tree}}").strip()
    got = git("rev-parse", f"{tip}^{{tree}}").strip()
    if want != got:
        die(f"the exported series builds tree {got[:12]}, not {ref}'s "
            f"{want[:12]}: see `git -C {TREE} diff {ref} {tip}`")
    say(f"exported {len(series)} patches from {ref}"
        + (f"; removed {', '.join(gone)}" if gone else ""))
    return 0
