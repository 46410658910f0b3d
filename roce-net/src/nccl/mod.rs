//! NCCL advice.
