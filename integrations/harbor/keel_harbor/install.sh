#!/bin/sh
# Installs the keel binary uploaded to $1 as $2 in a task's container and checks that it runs
# here, with the programs its tools need. Run as root by keel_harbor.KeelAgent.
set -eu
src=$1
dest=$2
mkdir -p "$(dirname "$dest")"
cp "$src" "$dest.new"
chmod 0755 "$dest.new"
mv "$dest.new" "$dest"
rm -f "$src"
if ! version=$("$dest" --version 2>&1); then
    echo "install-keel: $dest does not run in this container: $version" >&2
    echo "install-keel: the binary was built for another architecture or C library than this image's;" \
        "give the agent one built for it (--ak binary=PATH)" >&2
    exit 1
fi
# keel's Bash tool runs commands through bash in their own session (setsid).
for program in bash setsid; do
    if ! command -v "$program" >/dev/null 2>&1; then
        echo "install-keel: this image has no $program, which keel's Bash tool needs" >&2
        exit 1
    fi
done
echo "$version"
