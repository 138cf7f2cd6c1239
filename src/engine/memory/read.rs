//! Reading a memory update's reply: [`UpdateRequest::read_reply`] parses it (`super::parse`) and
//! [`UpdateRequest::ground`] holds it to what the request showed the model, in this order: summary
//! sentences that echo the update's instructions, list entity ids or say what no message said are
//! dropped (`super::ground`), the user's own statements the summary left out are added
//! (`super::summary`), changed facts become past (`super::supersede`), then aliases, names and facts
//! no message says are dropped (`super::ground`).
//! The top of the update's post-processing: it imports the request (`super::prompt`), parsing,
//! grounding, summaries and superseding, and none of them imports it.
//! Must not import anything outside `crate::engine`.

use super::error::MemoryError;
use super::ground::{
    drop_id_sentences, drop_instruction_echo, drop_unsupported, ground_aliases, ground_facts,
    ground_names,
};
use super::parse::{is_structured_reply, parse_reply, ParsedUpdate};
use super::prompt::{instruction_sentences, UpdateRequest};
use super::summary::with_dated_user_statements;
use super::supersede::supersede;
use crate::engine::model::{Millis, Role};

impl UpdateRequest {
    /// The update a reply to this request makes: parsed ([`parse_reply`]) and held to
    /// what the request showed ([`UpdateRequest::ground`]). A reply in the update's JSON shape with
    /// nothing in it still gives the user's own statements of these messages (the engine's rule, not
    /// the model's): a small model often answers `{"summary": "", "entities": []}`. Anything else that
    /// does not parse is an error, and nothing may change.
    pub fn read_reply(&self, reply: &str) -> Result<ParsedUpdate, MemoryError> {
        match parse_reply(reply) {
            Ok(mut parsed) => {
                self.ground(&mut parsed);
                Ok(parsed)
            }
            Err(MemoryError::NoMemory) if is_structured_reply(reply) => {
                let mut parsed = ParsedUpdate::default();
                self.ground(&mut parsed);
                if parsed.summary.is_none() {
                    return Err(MemoryError::NoMemory);
                }
                parsed
                    .notes
                    .push("the reply held nothing; the user's own statements are kept".into());
                Ok(parsed)
            }
            Err(e) => Err(e),
        }
    }

    /// Holds `parsed` to what this request showed the model (`super::ground`): summary sentences
    /// that repeat the engine's own instructions are dropped, then the user's own statements the
    /// summary left out are added to it (`summary::with_user_statements`: a small model's
    /// summary often omits a fact, or is empty, and the messages it covers then leave the prompt for
    /// good), each with the day it was said; changed facts become past (`super::supersede`);
    /// aliases and entity names in none of the previous summary, the known entities and the
    /// new messages are dropped, and so is every description sentence, property and relationship no
    /// message says of its entity; each entity cites the messages that name it.
    pub fn ground(&self, parsed: &mut ParsedUpdate) {
        let read = self
            .prompt
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        if let Some(text) = parsed.summary.take() {
            let text = self.drop_unread(&text, &read, &mut parsed.notes);
            parsed.summary = Some(text).filter(|t| !t.trim().is_empty());
        }
        let said: Vec<(&str, Option<Millis>)> = self
            .read
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| (m.content.as_str(), Some(m.created_at)))
            .collect();
        parsed.summary = with_dated_user_statements(parsed.summary.as_deref(), &said);
        if let Some(text) = parsed.summary.take() {
            let text = supersede(
                self.previous_text.as_deref(),
                &text,
                &self.read,
                &parsed.no_longer_true,
            );
            parsed.summary = Some(text).filter(|t| !t.trim().is_empty());
        }
        ground_aliases(parsed, &read);
        ground_names(parsed, &read);
        ground_facts(parsed, &self.read, &self.known);
    }

    /// The model's summary `text` without the sentences that echo the update's instructions, list
    /// entity ids or say what nothing the request showed (`read`) says, each kind noted in `notes`.
    fn drop_unread(&self, text: &str, read: &str, notes: &mut Vec<String>) -> String {
        let (text, echoed) = drop_instruction_echo(text, &instruction_sentences());
        if echoed > 0 {
            notes.push(format!(
                "{echoed} summary sentence(s) repeated the update's instructions, dropped"
            ));
        }
        let ids: Vec<&str> = self.known.iter().map(|k| k.id.as_str()).collect();
        let (text, with_ids) = drop_id_sentences(&text, &ids);
        if with_ids > 0 {
            notes.push(format!(
                "{with_ids} summary sentence(s) listed entity ids, dropped"
            ));
        }
        let (text, unsupported) = drop_unsupported(&text, read);
        if unsupported > 0 {
            notes.push(format!(
                "{unsupported} summary sentence(s) said what no message said, dropped"
            ));
        }
        text
    }
}
