//! Building blocks whose wire shape is the same in MCP 2025-11-25 and 2026-07-28:
//! content blocks, resources, prompts, elicitation field schemas, sampling pieces and
//! small common types. Each revision module uses these directly.
//!
//! A type lives here when its schema is identical in both revisions (ignoring
//! descriptions), or differs only by an optional member that the other revision allows
//! as an extra property; such types say so in their docs.

mod common;
mod content;
mod elicit_result;
mod elicitation;
mod prompt;
mod resource;
mod sampling;
mod tool;

pub use common::*;
pub use content::*;
pub use elicit_result::*;
pub use elicitation::*;
pub use prompt::*;
pub use resource::*;
pub use sampling::*;
pub use tool::*;
