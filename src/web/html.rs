//! HTML made safe and laid out: every text a worker or a file could have written goes through
//! [`text`] (HTML's five specials as entities, and each character a terminal would obey shown
//! as the CLI shows it — `\x1b`, `\r`, `\u{202e}` — so nothing hidden reaches the page), and
//! every page through [`page`], the one layout with the embedded style and script.

use std::fmt::Write as _;

/// The style and the script, inside the binary (no build step, no network).
pub(crate) const STYLE: &str = include_str!("assets/style.css");
pub(crate) const SCRIPT: &str = include_str!("assets/app.js");

/// `s` as HTML text (and as an attribute's value inside double quotes): each character a
/// terminal would obey shown as the CLI shows it ([`crate::shown::escape`]; newlines kept),
/// then `& < > " '` as entities.
pub(crate) fn text(s: &str) -> String {
    let shown = crate::shown::escape(s, crate::shown::Newlines::Keep);
    let mut out = String::with_capacity(shown.len() + 8);
    for c in shown.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// [`text`] of one line: a newline shown as `\n` too.
pub(crate) fn line(s: &str) -> String {
    text(s).replace('\n', "\\n")
}

/// [`text`] of bytes that may not be UTF-8 (a worker's log): each byte that is not shown as
/// `\xNN`.
pub(crate) fn bytes(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for chunk in b.utf8_chunks() {
        out.push_str(&text(chunk.valid()));
        for x in chunk.invalid() {
            let _ = write!(out, "\\x{x:02x}");
        }
    }
    out
}

/// One page: the title, the navigation, `body` (already HTML), and the data the script reads
/// from `<body>` (`data-*` attributes, escaped here).
pub(crate) fn page(title: &str, body: &str, data: &[(&str, &str)]) -> String {
    let mut attrs = String::new();
    for (k, v) in data {
        let _ = write!(attrs, " data-{k}=\"{}\"", text(v));
    }
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title} · guild-hall</title>\n<link rel=\"icon\" href=\"data:,\"><link rel=\"stylesheet\" href=\"/assets/style.css\">\n\
         <script src=\"/assets/app.js\" defer></script>\n</head>\n<body{attrs} data-live=\"off\">\n\
         <a class=\"skip\" href=\"#main\">Skip to content</a>\n\
         <header class=\"top\"><nav aria-label=\"guild-hall\"><a href=\"/\" data-testid=\"nav-board\">guild-hall</a></nav>\
         <span id=\"live\" class=\"live\" role=\"status\" aria-live=\"polite\" data-testid=\"live\">connecting…</span></header>\n\
         <main id=\"main\" tabindex=\"-1\">\n{body}\n</main>\n</body>\n</html>\n",
        title = text(title),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_hidden_characters_are_shown_not_obeyed() {
        assert_eq!(text("<script>alert('x')</script> & \"q\""), "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
        assert_eq!(text("a\x1b[31mred\r\u{202e}b\u{9b}\tc\nd"), "a\\x1b[31mred\\r\\u{202e}b\\u{9b}\tc\nd");
        assert_eq!(line("a\nb"), "a\\nb");
        assert_eq!(bytes(b"ok \xff<"), "ok \\xff&lt;");
        assert_eq!(text("plain — text"), "plain — text");
    }

    #[test]
    fn a_page_escapes_its_title_and_data() {
        let p = page("<t>", "<p>body</p>", &[("id", "\"x\"")]);
        assert!(p.contains("<title>&lt;t&gt; · guild-hall</title>"));
        assert!(p.contains("data-id=\"&quot;x&quot;\""));
        assert!(p.contains("<p>body</p>"));
    }
}
