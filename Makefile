# kmmscand: developers' entry points. `make run` shows it, `make check`
# tests it; everything else is a step of those two. See README.md.

KMM := python3 harness/kmm

.PHONY: help deps tree export kernel kernel-release vm check lint stress run bench clean

help:
	@sed -n 's/^##//p' $(MAKEFILE_LIST)

## run      install what is missing, build the debug kernel, boot the
##          two-tier VM and show a hot set being promoted
run:
	$(KMM) run $(if $(DEMO_SECONDS),--seconds $(DEMO_SECONDS))

## check    every test: checkpatch, W=1, sparse, KUnit, kselftests in the VM;
##          last line: N passed, N failed, N skipped
check:
	$(KMM) check

## lint     the harness's own unit tests (pytest on harness/tests) and
##          lint (ruff, mypy, shellcheck); full output in out/logs/
lint:
	$(KMM) lint

## stress   the kmmscand stress suite in the VM, debug kernel, for
##          STRESS_SECONDS (default 300); prints its figures and splats
stress:
	$(KMM) stress $(if $(STRESS_SECONDS),--seconds $(STRESS_SECONDS))

## bench    kmmscand vs NUMA balancing tiering mode and DAMON, release kernel:
##          table, out/bench/bench.json, PNG plots (QUICK=1: ~6 min;
##          WORKLOADS=a,c CONFIGS=numab,kmmscand to pick; KERNEL=bzImage
##          to measure a given kernel as it is; HOST=1: on this machine,
##          no VM, if it runs the series and has a slow tier, into
##          out/bench-host/; HOST=1 DRY_RUN=1: check and print the plan)
bench:
	$(KMM) bench $(if $(QUICK),--quick) $(if $(WORKLOADS),--workloads $(WORKLOADS)) \
		$(if $(CONFIGS),--configs $(CONFIGS)) $(if $(KERNEL),--kernel $(KERNEL)) \
		$(if $(HOST),--host) $(if $(DRY_RUN),--dry-run)

## deps     install missing Debian packages and virtme-ng (build/venv)
deps:
	$(KMM) deps

## tree     build/linux: the base as git, the series applied on top
##          (FORCE=1 discards local changes there)
tree:
	$(KMM) tree $(if $(FORCE),--force)

## export   REF=branch: patches/ and the new files from a reshaped branch
##          of build/linux (the inverse of make tree; see docs/development.md)
export:
	@test -n "$(REF)" || { echo "usage: make export REF=branch"; exit 2; }
	$(KMM) export $(REF)

## kernel   build the debug test kernel; prints its path (out/bzImage)
kernel:
	$(KMM) kernel

kernel-release:
	$(KMM) kernel --release

## vm       CMD='...': run CMD in the two-tier VM with the last built kernel
vm:
	@test -n "$(CMD)" || { echo "usage: make vm CMD='command'"; exit 2; }
	$(KMM) vm "$(CMD)" $(if $(TIMEOUT),--timeout $(TIMEOUT))

## series   out/series/: the series as mail (git format-patch, cover letter
##          with the benchmark table of out/bench/table.md, or else the
##          last full run's, results/bench.md)
series:
	$(KMM) series

## series-check  checkpatch each mailed patch, check that git am of
##          out/series gives the tree make kernel builds, build the kernel
##          after each patch (build/obj-series); names the first that breaks;
##          ONLY=N-M,K builds after those patches only (a reshape's prefixes);
##          TESTS=1 also runs each kselftest program of the series, in the
##          two-tier VM, on the kernel of each prefix that adds or changes it
series-check:
	$(KMM) series-check $(if $(ONLY),--only $(ONLY)) $(if $(TESTS),--tests)

## deb      installable kernel packages of the series in out/deb/
##          (DEB_CONFIG=/boot/config-$(uname -r): your distro's config
##          + CONFIG_KMMSCAND=y; default: the release flavour's config)
deb:
	$(KMM) deb $(if $(DEB_CONFIG),--config $(DEB_CONFIG))

.PHONY: series series-check deb

## clean    remove build products (build/ and out/)
clean:
	rm -rf build out
