#!/bin/sh
# setup.sh — installs the Debian packages graphmert needs, only those missing. Idempotent:
# a second run installs nothing. Used by `make test`, `make demo` and .ci/run. libdnnl-dev is
# optional at run time (gm_dnnl.c loads it if present): it speeds up the "medium" precision.
# sqlite3 exports the Gene Ontology (scripts/data/gene_ontology.sh); strace lets the hostile-folder
# specs see which files a load opens; lua-dbi-sqlite3 writes and reads the kg.sqlite stores (Lua DBI
# with prepared statements over Debian's libsqlite3); raptor2-utils' rapper checks the RDF exports;
# time (/usr/bin/time) reads the peak memory of the extraction benchmark (make bench-extract);
# chromium (headless) runs the KG page's specs and its benchmark, fonts-dejavu-core its text.
set -e
PACKAGES="build-essential pkg-config lua5.4 liblua5.4-dev libopenblas-dev libopenmpi-dev openmpi-bin lua-lpeg lua-busted \
lua-cjson libreadline-dev wordnet-base gnuplot-nox libdnnl-dev sqlite3 strace \
lua-dbi-sqlite3 raptor2-utils time chromium fonts-dejavu-core"
missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "setup: installing$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing
