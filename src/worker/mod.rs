//! Workers: their packages (`worker.yaml`), the shim that runs and contains each attempt, the
//! Landlock sandbox that confines it, their memory, the toolbox they talk back through, and
//! telling their processes from others (`peer`).

pub mod launch;
pub mod liveness;
pub mod memory;
pub mod package;
pub mod peer;
pub mod sandbox;
pub mod shim;
pub mod toolbox;

pub use package::{expand_home, pass_env, Catalog, Checkout, Manifest, Package, Protocol, SandboxSpec, Source};
