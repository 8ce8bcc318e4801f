"""make deps' base from another suite (deps.py): apt's sources read, the
Debian mirror found in them, and the files written for the suite."""

import pytest

from conftest import fixture_text
from kmmlib import common, deps
from kmmlib.common import Failure

# Captured inputs in fixtures/apt/ (fixtures/README.md): a Debian 12
# machine's debian.sources, with the security stanza first and a disabled
# one last; a third party's .sources with a suite of the release's name
# and its key inline; an older machine's one-line sources.list; and
# apt-cache madison's lines for three linux-source packages.
DEB822 = fixture_text("apt/debian.sources")
THIRD_PARTY = fixture_text("apt/vendor.sources")
ONE_LINE = fixture_text("apt/sources.list")
MADISON = fixture_text("apt/madison.txt")

ONLY_SECURITY = """\
Types: deb
URIs: http://mirror.invalid/debian-security
Suites: bookworm-security
Components: main
"""


def test_deb822_stanzas():
    entries = deps.parse_deb822(DEB822, "debian.sources")
    assert [e.uris for e in entries] == [
        ["http://mirror.invalid/debian-security"],
        ["http://mirror.invalid/debian"]]
    assert entries[1].types == ["deb", "deb-src"]
    assert entries[1].suites == ["bookworm", "bookworm-updates"]
    assert entries[1].signed_by == deps.DEBIAN_KEYRING
    key = deps.parse_deb822(THIRD_PARTY, "vendor.sources")[0].signed_by
    assert key is not None and key.splitlines()[1] == "-----BEGIN PGP " \
        "PUBLIC KEY BLOCK-----"


def test_one_line_entries():
    entries = deps.parse_one_line(ONE_LINE, "sources.list")
    assert [(e.types, e.uris, e.suites) for e in entries] == [
        (["deb"], ["https://vendor.invalid/debian"], ["bookworm"]),
        (["deb"], ["http://mirror.invalid/debian/"], ["bookworm"]),
        (["deb-src"], ["http://mirror.invalid/debian/"], ["bookworm"]),
        (["deb"], ["http://security.invalid/debian-security"],
         ["bookworm-security"])]
    assert entries[0].signed_by == "/etc/apt/keyrings/vendor.gpg"
    assert entries[1].signed_by == deps.DEBIAN_KEYRING
    assert entries[3].signed_by is None


def test_the_debian_mirror():
    sources = (deps.parse_deb822(THIRD_PARTY, "vendor.sources") +
               deps.parse_deb822(DEB822, "debian.sources"))
    assert deps.debian_archive(sources, "bookworm").uris == [
        "http://mirror.invalid/debian"]
    sources = deps.parse_one_line(ONE_LINE, "sources.list")
    assert deps.debian_archive(sources, "bookworm").uris == [
        "http://mirror.invalid/debian/"]
    # Without Signed-By, apt's trusted keys: the entry is taken.
    unsigned = deps.parse_one_line(
        "deb http://mirror.invalid/debian bookworm main\n", "sources.list")
    assert deps.debian_archive(unsigned, "bookworm") == unsigned[0]


def test_only_security_is_no_mirror():
    sources = deps.parse_deb822(ONLY_SECURITY, "debian.sources")
    with pytest.raises(Failure, match=r"serves Debian's bookworm suite.*"
                       r"mirror.invalid/debian-security bookworm-security"):
        deps.debian_archive(sources, "bookworm")
    with pytest.raises(Failure, match="they serve: nothing"):
        deps.debian_archive([], "bookworm")


def test_apt_sources_in_apt_order(tmp_path):
    parts = tmp_path / "sources.list.d"
    parts.mkdir()
    (tmp_path / "sources.list").write_text(ONE_LINE)
    (parts / "debian.sources").write_text(DEB822)
    (parts / "vendor.list.disabled").write_text(ONE_LINE)
    (parts / "a-security.list").write_text(
        "deb http://mirror.invalid/debian-security bookworm-security main\n")
    paths = [e.path for e in deps.apt_sources(str(tmp_path))]
    assert [p.rsplit("/", 1)[1] for p in dict.fromkeys(paths)] == [
        "sources.list", "a-security.list", "debian.sources"]
    assert len(paths) == 4 + 1 + 2


def test_release_codename():
    text = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n' \
        "VERSION_CODENAME=bookworm\nID=debian\n"
    assert deps.release_codename(text) == "bookworm"
    with pytest.raises(Failure, match="VERSION_CODENAME"):
        deps.release_codename('PRETTY_NAME="Debian GNU/Linux trixie/sid"\n')


def test_suite_files():
    source, pin = deps.suite_files("trixie-backports", "/etc/apt")
    assert source == "/etc/apt/sources.list.d/kmm-trixie-backports.sources"
    assert pin == "/etc/apt/preferences.d/kmm-trixie-backports"
    text = deps.suite_source("http://mirror.invalid/debian", "trixie-backports")
    entry, = deps.parse_deb822(text, source)
    assert (entry.types, entry.uris, entry.suites) == (
        ["deb"], ["http://mirror.invalid/debian"], ["trixie-backports"])
    assert entry.signed_by == deps.DEBIAN_KEYRING
    # The suite's own entry is not the Debian archive of the release.
    with pytest.raises(Failure):
        deps.debian_archive([entry], "bookworm")


def test_suite_pin():
    stanzas = deps.suite_pin("trixie-backports",
                             "linux-source-7.3").split("\n\n")
    assert len(stanzas) == 2
    # Nothing else from the suite, upgrades of installed packages included.
    assert "Package: *\nPin: release n=trixie-backports\n" \
        "Pin-Priority: 1\n" in stanzas[0] + "\n"
    # The base follows the suite's updates once installed.
    assert "Package: linux-source-7.3\nPin: release n=trixie-backports\n" \
        "Pin-Priority: 100\n" in stanzas[1]


def test_suite_versions():
    assert deps.suite_versions(MADISON, "trixie-backports") == {
        "linux-source-7.2": ["7.2.12-1~bpo13+1", "7.2.11-1~bpo13+1"],
        "linux-source-7.3": ["7.3.4-1~bpo13+1"]}
    assert deps.suite_versions(MADISON, "bookworm") == {}
    assert deps.suite_versions("", "trixie-backports") == {}


def test_base_alone_from_the_suite():
    cmd = deps.base_install_cmd("linux-source-7.3", "trixie-backports")
    assert cmd[-1] == "linux-source-7.3/trixie-backports"
    assert "-t" not in cmd and "--no-install-recommends" in cmd


def test_base_names_follow_the_version():
    assert common.BASE_PACKAGE == f"linux-source-{common.BASE_VERSION}"
    assert common.BASE_TARBALL == f"/usr/src/{common.BASE_PACKAGE}.tar.xz"
    assert common.BASE_SUITE == common.BASE_SUITES.get(common.BASE_VERSION)
    assert deps.APT_PACKAGES[common.BASE_PACKAGE] == common.BASE_TARBALL
