//! Fleet report.
