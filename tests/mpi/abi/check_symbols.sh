#!/bin/sh
# check_symbols.sh OURS MPICH: the MPI library OURS exports every C symbol of
# MPICH's ABI that MPICH's library exports: each MPI_*, PMPI_*, MPIX_*,
# PMPIX_* function and object (the Fortran bindings' lowercase names are not
# in it: Debian keeps those in libmpichfort). Also:
#  - MPI_X is a weak alias of PMPI_X (same address): a profiling library
#    defines MPI_X and reaches this library's code through PMPI_X;
#  - every object has MPICH's size: an executable built against MPICH copies
#    MPICH's size at link time (copy relocation);
#  - the C++ bindings' hooks libmpichcxx.so.12 needs are exported.
# Exit 77 (skipped) without MPICH's library.
set -u
ours=$1 mpich=$2
[ -r "$mpich" ] || { echo "no $mpich: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# "name type size address" of the defined dynamic symbols
syms() { nm -D -S --defined-only "$1" | awk 'NF == 4 { print $4, $3, $2, $1 } NF == 3 { print $3, $2, "-", $1 }' | sort; }
syms "$ours" > "$tmp/ours"
syms "$mpich" > "$tmp/mpich"
grep -E '^P?MPIX?_' "$tmp/mpich" | cut -d' ' -f1 > "$tmp/want"
cut -d' ' -f1 "$tmp/ours" > "$tmp/have"
fail=0
missing=$(comm -23 "$tmp/want" "$tmp/have")
if [ -n "$missing" ]; then
  echo "missing ($(echo "$missing" | wc -l)):"; echo "$missing" | sed 's/^/  /'; fail=1
fi
# MPI_X weak, at PMPI_X's address
awk '$1 ~ /^MPIX?_/ && ($2 == "T" || $2 == "W") { print }' "$tmp/ours" | while read -r name type size addr; do
  p=$(awk -v n="P$name" '$1 == n { print $4 }' "$tmp/ours")
  [ "$type" = W ] && [ "$p" = "$addr" ] || echo "  $name: type $type at $addr, PMPI at ${p:-none}"
done > "$tmp/alias"
if [ -s "$tmp/alias" ]; then echo "not a weak alias of its PMPI_ name:"; cat "$tmp/alias"; fail=1; fi
# objects: MPICH's sizes
awk '$2 ~ /^[BDR]$/ { print $1, $3 }' "$tmp/mpich" | grep -E '^(P?MPIX?_|MPIR_F08_|MPIR_C_)' | while read -r name size; do
  have=$(awk -v n="$name" '$1 == n { print $3 }' "$tmp/ours")
  [ "$have" = "$size" ] || echo "  $name: size ${have:-none}, MPICH's $size"
done > "$tmp/sizes"
if [ -s "$tmp/sizes" ]; then echo "objects whose size differs from MPICH's:"; cat "$tmp/sizes"; fail=1; fi
for hook in MPIR_Dup_fn MPII_Op_set_cxx MPII_Errhandler_set_cxx MPII_Keyval_set_proxy; do
  grep -q "^$hook " "$tmp/ours" || { echo "missing $hook"; fail=1; }
done
n_want=$(wc -l < "$tmp/want")
n_fn=$(grep -cE '^MPIX?_\S+ [TW] ' "$tmp/ours")
echo "MPICH exports $n_want MPI symbols; this library exports $n_fn MPI_/MPIX_ functions (each with a PMPI_ twin)"
[ $fail = 0 ] && echo "PASS" || echo "FAIL"
exit $fail
