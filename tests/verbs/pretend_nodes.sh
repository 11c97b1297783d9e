#!/bin/sh
# Usage: pretend_nodes.sh RANKS_PER_NODE PROGRAM [ARGS...]
# Splits one host into pretend nodes for rdmx (RDMX_NODE_ID): ranks r and s
# share a node, and so shared memory, when r / RANKS_PER_NODE equals
# s / RANKS_PER_NODE; every other pair talks over rc. One guest then runs
# jobs where some pairs use sm and others rc. The rank is the one Open MPI's
# mpirun (or a PMI launcher) puts in the environment.
per="$1"
shift
rank="${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-0}}}"
RDMX_NODE_ID="pretend$((rank / per))"
export RDMX_NODE_ID
exec "$@"
