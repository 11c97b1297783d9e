#error "layering: this layer may not use verbs or rdma_cm; only transport/ may (see docs/architecture.md)"
