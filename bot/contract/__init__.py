"""Task contracts: what a job must do, may touch, and how success is decided."""
