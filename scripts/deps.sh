# Sourced by scripts/check and scripts/run-lab: installs the Debian 12
# packages tokstream needs, and only those that are missing.
TOKSTREAM_PACKAGES="gcc make autoconf automake pkg-config libfcgi-dev \
libjansson-dev libcurl4-openssl-dev libcmocka-dev lighttpd spawn-fcgi bats \
curl jq"

tokstream_install_deps() {
	missing=""
	for p in $TOKSTREAM_PACKAGES; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q "install ok installed" || missing="$missing $p"
	done
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
