//! Commissions: observe (read the world into a snapshot), plan (pure: the state machine and
//! everything it decides) and act (one small idempotent effect per action).

pub mod act;
pub mod decide;
pub mod observe;
