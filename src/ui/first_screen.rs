//! The static first screen index.html draws before the wasm (`#first-screen`: the layout and a
//! composer that takes typing at once) and its takeover by the app: [`typed`] reads what was typed
//! there (and whether Enter was pressed, which index.html's script marks with `data-send`) for the
//! app's composer to start with; [`hand_over`], run right after the mount in the same task (no
//! paint in between), moves the caret, the selection and the focus into the app's composer and
//! removes the static screen. Browser plumbing only: whether a press of Enter sends is
//! `engine::keys::send_on_start`, carried out by `ui/flow.rs`. Must not import `crate::store`,
//! `crate::transport` or `crate::ui`.

use wasm_bindgen::JsCast;
use web_sys::{Document, HtmlTextAreaElement};

/// The static screen's root and its composer (index.html).
const SCREEN_ID: &str = "first-screen";
const INPUT_ID: &str = "first-screen-input";
/// The app's composer.
const COMPOSER: &str = "[data-testid=\"composer-input\"]";

/// What the static first screen's composer holds when the app starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Typed {
    /// Its text, as typed.
    pub text: String,
    /// Enter (not Shift+Enter) was pressed there: the app sends once it is ready.
    pub send: bool,
}

fn document() -> Option<Document> {
    web_sys::window()?.document()
}

fn static_input(doc: &Document) -> Option<HtmlTextAreaElement> {
    doc.get_element_by_id(INPUT_ID)?.dyn_into().ok()
}

/// What was typed in the static first screen (`None`: the page has none, or nothing was typed and
/// Enter was not pressed).
pub fn typed() -> Option<Typed> {
    let input = static_input(&document()?)?;
    let typed = Typed {
        text: input.value(),
        send: input.has_attribute("data-send"),
    };
    (!typed.text.is_empty() || typed.send).then_some(typed)
}

/// The app is mounted: its composer takes the static one's text (already its draft, see
/// [`typed`]), caret, selection and focus, and the static screen goes. Nothing happens without a
/// static screen; without the app's composer the static screen stays (the app did not mount).
pub fn hand_over() {
    let Some(doc) = document() else { return };
    let Some(screen) = doc.get_element_by_id(SCREEN_ID) else {
        return;
    };
    let composer = doc
        .query_selector(COMPOSER)
        .ok()
        .flatten()
        .and_then(|e| e.dyn_into::<HtmlTextAreaElement>().ok());
    let Some(composer) = composer else { return };
    if let Some(input) = static_input(&doc) {
        let focused = doc.active_element().is_some_and(|a| a == **input);
        let text = input.value();
        if composer.value() != text {
            composer.set_value(&text);
        }
        let start = input.selection_start().ok().flatten().unwrap_or(0);
        let end = input.selection_end().ok().flatten().unwrap_or(start);
        let direction = input.selection_direction().ok().flatten();
        let _ = composer.set_selection_range_with_direction(
            start,
            end,
            direction.as_deref().unwrap_or("none"),
        );
        if focused {
            // In place of the static composer, already in view: no scrolling into view (a
            // layer scroll of its own at start-up, ~2.6 ms at 4x CPU in a returning visit).
            let options = web_sys::FocusOptions::new();
            options.set_prevent_scroll(true);
            let _ = composer.focus_with_options(&options);
        }
    }
    screen.remove();
}
