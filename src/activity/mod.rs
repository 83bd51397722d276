//! What every kind of activity shares (commissions now; meetings and wave tasks next): its git
//! (branch, worktree made and secured by record, squash merge), its runtime state on disk
//! (records, run and exit info, heartbeat, atomic writes) and its timeline.

pub mod git;
pub mod merge;
pub mod state;
pub mod timeline;
pub mod worktree;
