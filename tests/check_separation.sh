#!/bin/sh
# The trusted checker links only the exact/interval stack.  Fail if any
# checker source includes, or any checker object or the rankcert binary
# references, float linear algebra, LP solvers or producer code.
# usage: check_separation.sh SOURCE_ROOT LIBCHECKER RANKCERT_EXE
set -eu
root=$1 lib=$2 exe=$3
status=0
allowed='^(rankcert/(exact|input|array|bundle|certificate|enclose|check|kinds|result|exit|fast|sweep|profile|paths)\.hpp|(\.\./)?(ldl|rows|interaction)\.hpp|(cert/)?(common|units|combination|zonal)\.hpp|flint/.*|arb\.h|arf\.h|mag\.h|arb_mat\.h|gmp\.h|mpfr\.h|nlohmann/json\.hpp|openssl/evp\.h|CLI/CLI\.hpp|unistd\.h|[a-z_]+)$'
for f in "$root"/src/checker/*.cpp "$root"/src/checker/*.hpp "$root"/src/checker/cert/*.cpp "$root"/src/checker/cert/*.hpp "$root"/src/cli/main.cpp "$root"/include/rankcert/*.hpp; do
  grep -ho '#include [<"][^>"]*[>"]' "$f" | sed 's/#include [<"]\(.*\)[>"]/\1/' | while read -r inc; do
    if ! echo "$inc" | grep -Eq "$allowed"; then
      echo "separation: $f includes $inc, which the trusted checker may not use"
      exit 1
    fi
  done || status=1
done
# Symbols of float linear algebra / LP solvers / the producer.
forbidden='(Eigen|cblas_|dgesvd|dgemm|dsyev|LAPACKE|glp_|Clp|rankcert::producer|openblas)'
if nm -C "$lib" 2>/dev/null | grep -Eq "$forbidden"; then
  echo "separation: the checker library references a forbidden symbol:"; nm -C "$lib" | grep -E "$forbidden" | head
  status=1
fi
if ldd "$exe" | grep -Eiq 'blas|lapack|glpk|clp|eigen'; then
  echo "separation: rankcert links a float linear algebra or LP library:"; ldd "$exe"
  status=1
fi
[ $status -eq 0 ] && echo "separation: checker sources, objects and binary use only the trusted stack"
exit $status
