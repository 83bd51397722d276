//! Markdown artifacts under `.lore/`: split frontmatter from body, parse and validate it into
//! typed commissions, and write the reconciler's keys back surgically. Decides nothing.

pub mod commission;
pub mod frontmatter;
pub mod ids;
pub mod meeting;
pub mod write;

pub use commission::{Commission, Desired, Status};
pub use frontmatter::Problem;
pub use meeting::{Meeting, MeetingStatus};
