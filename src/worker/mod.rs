//! Workers: their packages (`worker.yaml`), the shim that runs and contains each attempt, the
//! Landlock sandbox that confines it, their memory, and the toolbox they talk back through.

pub mod launch;
pub mod memory;
pub mod package;
pub mod sandbox;
pub mod shim;
pub mod toolbox;

pub use package::{expand_home, pass_env, Catalog, Checkout, Manifest, Package, Protocol, SandboxSpec, Source};
