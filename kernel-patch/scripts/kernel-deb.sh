#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernel-deb.sh - an installable Debian package of one built flavour, for
# a test box (make deb FLAVOUR=...). Never installed here.
#
# Usage: kernel-deb.sh FLAVOUR OUTDIR
#
# The kernel comes from the run manifest (make kernel builds it first):
# the same bzImage, System.map and config the guests boot, and the
# flavour's provenance (series hash included), which the package installs
# as /boot/opbench-provenance-<release>: the native runner (and the kit)
# recognise the flavour by it. The maintainer scripts run the hooks in
# /etc/kernel/{preinst,postinst,prerm,postrm}.d, as the kernel's own
# builddeb writes them (initramfs-tools, grub and the like hook there).
#
# Packaged with dpkg-deb from the built tree rather than with `make
# bindeb-pkg`: bindeb-pkg needs dpkg-buildpackage (dpkg-dev), which the
# build root does not hold, and adding it would change the build root's
# key and with it every kernel's. What the package holds is what
# bindeb-pkg's linux-image package holds for a kernel without modules
# (the measured configuration has CONFIG_MODULES off).
#
# The measured configuration is a KVM/QEMU guest's (tinyconfig with
# kvm_guest.config: virtio devices): the package boots a virtual test
# box; bare metal needs a configuration with its drivers.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

[ $# -eq 2 ] || die "usage: kernel-deb.sh FLAVOUR OUTDIR (make deb FLAVOUR=...)"
flavour=$1
outdir=$2
k=$(kernel_dir "$flavour")
prov=$k/provenance
[ -r "$prov" ] || die "$k has no provenance: make kernel FLAVOUR=$flavour again"
get() { sed -n "s/^$1=//p" "$prov"; }
rel=$(get kernel_release)
[ -n "$rel" ] || die "$prov names no kernel_release"
srcver=$(get source_version)
hash=$(get series_hash)
if grep -q '^CONFIG_MODULES=y' "$k/config"; then
	die "$flavour's configuration has modules; kernel-deb.sh packages kernels without them"
fi
# Debian's version: the source's, then the series (none: the baseline).
version="${srcver}+opbench.${flavour}.${hash:0:12}"
version=${version//_/-}
pkg=linux-image-$rel
deb=$outdir/${pkg}_${version}_amd64.deb
mkdir -p "$outdir"
[ ! -e "$deb" ] || die "$deb exists: it is this flavour's package already (delete it to make it again)"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/root
install -d "$root/boot" "$root/DEBIAN" "$root/usr/share/doc/$pkg"
install -m 0644 "$k/bzImage" "$root/boot/vmlinuz-$rel"
install -m 0644 "$k/System.map" "$root/boot/System.map-$rel"
install -m 0644 "$k/config" "$root/boot/config-$rel"
install -m 0644 "$prov" "$root/boot/opbench-provenance-$rel"
cat > "$root/usr/share/doc/$pkg/README.opbench" <<EOF
rseq-opbench flavour '$flavour' of linux-source $srcver ($rel).
Series hash: $hash. The file /boot/opbench-provenance-$rel says how it was
built; the rseq-opbench kit (make kit) reads it to label its results.
EOF
for script in preinst postinst prerm postrm; do
	cat > "$root/DEBIAN/$script" <<EOF
#!/bin/sh
set -e
# As the kernel's scripts/package/builddeb: the hooks of installed
# packages (initramfs, boot loader) for this kernel.
export DEB_MAINT_PARAMS="\$*"
test -d /etc/kernel/$script.d && run-parts --arg="$rel" --arg="/boot/vmlinuz-$rel" /etc/kernel/$script.d
exit 0
EOF
	chmod 0755 "$root/DEBIAN/$script"
done
cat > "$root/DEBIAN/control" <<EOF
Package: $pkg
Version: $version
Architecture: amd64
Maintainer: rseq-opbench <rseq-opbench@localhost>
Section: kernel
Priority: optional
Provides: linux-image, linux-image-2.6, linux-modules-$rel
Description: Linux $rel, rseq-opbench flavour $flavour
 The kernel rseq-opbench measures as flavour '$flavour' (linux-source
 $srcver, series $hash), for a test box: the kit (make kit) recognises it
 by /boot/opbench-provenance-$rel.
EOF
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb.tmp" >/dev/null
mv "$deb.tmp" "$deb"
log "[$flavour] $deb ($(du -h "$deb" | cut -f1)): install on a test box with dpkg -i, boot it, run the kit"
echo "$deb"
