# Sourced by scripts/check, scripts/repeat and scripts/run-lab: installs the Debian 12
# packages tokstream needs, and only those that are missing.
TOKSTREAM_PACKAGES="gcc make autoconf automake pkgconf libfcgi-dev \
libjansson-dev libpcre2-dev libcurl4-openssl-dev libcmocka-dev lighttpd spawn-fcgi bats \
curl jq clang libclang-rt-14-dev valgrind git procps"

# What only the tests need: Debian's chromium, the headless browser of
# tests/integration/demo.bats (driven by the npm playwright-core, which
# downloads no browser of its own); haproxy, the tier over several
# fronts in tests/integration/scaleout.bats, and prometheus, which
# scrapes the backends there with etc/prometheus/tokstream-scrape.yml;
# python3, which runs the README's standard-library Python example in
# tests/integration/docs.bats and the clients of accept.bats and
# tokenize.bats (python3-minimal named too: it owns /usr/bin/python3,
# which scripts/check-tools asks of every command). scripts/check
# installs these too.
TOKSTREAM_TEST_PACKAGES="chromium haproxy prometheus python3 python3-minimal"

# What only the benchmarks need (scripts/bench-*): gnuplot for the PNG
# plots. tokstream_install_deps bench installs these too.
TOKSTREAM_BENCH_PACKAGES="gnuplot-nox"

# Node.js for the real-client tests (tests/node: node >= 18; Debian 12's
# nodejs is 18.20), installed when the machine has no node at all (a
# machine image may carry a newer one of its own).
TOKSTREAM_NODE_PACKAGES="nodejs npm"

# Commands that may come from outside Debian's packages, or are installed
# only by the benchmark that calls them, and the package that stands for
# them. scripts/check-tools reads this. python3: a fresh root's is
# python3-minimal's /usr/bin/python3, but a machine image may put its own
# first on PATH (CI's pyenv shim failed check-tools on 2026-12-06).
TOKSTREAM_COMMAND_PACKAGES="node:nodejs npm:npm python3:python3-minimal gnuplot:gnuplot-nox"

# tokstream_install_deps [test|bench]: with "test", TOKSTREAM_TEST_PACKAGES
# too; with "bench", TOKSTREAM_BENCH_PACKAGES too.
tokstream_install_deps() {
	missing=""
	pkgs=$TOKSTREAM_PACKAGES
	[ "${1:-}" = test ] && pkgs="$pkgs $TOKSTREAM_TEST_PACKAGES"
	[ "${1:-}" = bench ] && pkgs="$pkgs $TOKSTREAM_BENCH_PACKAGES"
	for p in $pkgs; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q "install ok installed" || missing="$missing $p"
	done
	# Node.js runs the real-client tests (npm packages, which work with
	# Debian 12's nodejs 18 and with newer ones): a machine's own node
	# is used when there is one.
	command -v node >/dev/null 2>&1 || missing="$missing nodejs"
	command -v npm >/dev/null 2>&1 || missing="$missing npm"
	[ -z "$missing" ] && return 0
	echo "installing missing Debian packages:$missing"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	# The lighttpd package's service start is refused here (policy-rc.d);
	# tokstream starts its own lighttpd.
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
	# shellcheck disable=SC2086
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends $missing
}

# Configures (once) and builds in the source tree with make -j.
tokstream_build() {
	if [ ! -x ./configure ] || [ configure.ac -nt ./configure ] ||
	   [ Makefile.am -nt ./configure ]; then
		autoreconf -fi
	fi
	if [ ! -f Makefile ] || [ ./configure -nt Makefile ]; then
		./configure ${TOKSTREAM_CONFIGURE_ARGS:-}
	fi
	make -j"$(nproc)"
}

# tokstream_copy_tree DIR: the tracked sources, copied to DIR for a second
# build (the source tree is configured in place, so a VPATH build cannot
# use it); DIR shares the source tree's node_modules. Run from the top of
# the source tree.
tokstream_copy_tree() {
	mkdir -p "$1"
	git ls-files -z | tar --null -T - -cf - | (cd "$1" && tar xf -) &&
		rm -rf "$1/tests/node/node_modules" &&
		ln -s "$(pwd)/tests/node/node_modules" \
			"$1/tests/node/node_modules"
}

# tokstream_build_copy DIR CONFIGURE-OPTION: copies the tracked sources to
# DIR and builds them there, configured once with CONFIGURE-OPTION (e.g.
# --enable-sanitizers); the build's output is dropped, its errors shown.
tokstream_build_copy() {
	tokstream_copy_tree "$1" &&
	(cd "$1" && { [ -x configure ] || autoreconf -fi >/dev/null; } &&
	    { [ -f Makefile ] || ./configure -q "$2"; } &&
	    make -j"$(nproc)" >/dev/null)
}

# Installs the npm packages of the real-client tests (tests/node) from the
# lockfile, when they are missing or older than the lockfile.
tokstream_node_deps() {
	[ -f tests/node/package-lock.json ] || return 0
	if [ ! -d tests/node/node_modules ] ||
	   [ tests/node/package-lock.json -nt tests/node/node_modules ]; then
		(cd tests/node && npm ci --no-audit --no-fund --loglevel=error) &&
			touch tests/node/node_modules
	fi
}
