# tests/lib/stage.bash - sourced by tests/integration/helpers.bash and
# tests/soak/soak.sh.
#
# Started as root, tokstream-ctl runs lighttpd and the responders as an
# unprivileged user (www-data by default), which must be able to run the
# responder and read the site config, its JSON error bodies and the demo
# page. A checkout where that user cannot reach them (under /root, whose
# mode is 0700, the usual place for root's work) would make those tests
# impossible; so they run from a copy instead.
#
# stage_for_user USER BUILDDIR SRCDIR: sets STAGE_BINDIR (the directory of
# tokstream-fcgi), STAGE_CTL (tokstream-ctl, for a test that runs it as
# USER) and STAGE_SITECONF (tokstream-site.conf, with errors/ and www/
# beside it) to the tree's own files when USER can reach them, or to a
# copy in a new directory under /tmp (mode 0755) when it cannot; then
# STAGE_DIR is that directory (remove it with stage_remove), else empty.
# Returns 1 when no copy can be made.
stage_for_user() {
	local user=$1 build=$2 src=$3
	STAGE_DIR=
	STAGE_BINDIR=$build/src
	STAGE_SITECONF=$src/etc/tokstream-site.conf
	STAGE_CTL=$src/scripts/tokstream-ctl
	if [ "$(id -u)" -ne 0 ] || [ "$user" = root ] ||
	   { setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups \
		-- test -x "$STAGE_BINDIR/tokstream-fcgi" &&
	     setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups \
		-- test -r "$src/etc/errors/status-503.html"; }; then
		return 0
	fi
	STAGE_DIR=$(mktemp -d /tmp/tokstream-stage.XXXXXX) || return 1
	chmod 0755 "$STAGE_DIR"
	mkdir -p "$STAGE_DIR/bin" "$STAGE_DIR/etc" &&
		cp "$build/src/tokstream-fcgi" "$src/scripts/tokstream-ctl" \
			"$STAGE_DIR/bin/" &&
		cp -R "$src/etc/tokstream-site.conf" "$src/etc/errors" \
			"$src/etc/www" "$STAGE_DIR/etc/" &&
		chmod -R a+rX "$STAGE_DIR" || return 1
	STAGE_BINDIR=$STAGE_DIR/bin
	STAGE_CTL=$STAGE_DIR/bin/tokstream-ctl
	STAGE_SITECONF=$STAGE_DIR/etc/tokstream-site.conf
}

# stage_remove: removes the copy stage_for_user made, if any.
stage_remove() {
	[ -n "${STAGE_DIR:-}" ] && rm -rf "$STAGE_DIR"
	STAGE_DIR=
}
