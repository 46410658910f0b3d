//! Pure checks over a HostState.
