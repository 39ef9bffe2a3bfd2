//! The gateway's log line formats: tracing-subscriber's, plus the id of the request being handled
//! ([`s3hpc_http::current_request_id`]), written as the span the id used to be in:
//! `request{id=...}: ` in text, `"span":{"id":"...","name":"request"}` in JSON. Only lines that
//! are logged pay for it; a request that logs nothing costs nothing here.

use std::fmt;

use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{Format, Json, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// `TIMESTAMP LEVEL request{id=ID}: TARGET: FIELDS`, without colours (the journal and log
/// shippers get plain text).
pub struct Text;

impl<S, N> FormatEvent<S, N> for Text
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut w: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        SystemTime.format_time(&mut w)?;
        write!(w, " {:>5} ", meta.level())?;
        if let Some(id) = s3hpc_http::current_request_id() {
            write!(w, "request{{id={id:016X}}}: ")?;
        }
        write!(w, "{}: ", meta.target())?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// tracing-subscriber's JSON line (events flattened), with the request's id as its `span`.
pub struct JsonLine(pub Format<Json>);

impl<S, N> FormatEvent<S, N> for JsonLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut w: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let Some(id) = s3hpc_http::current_request_id() else { return self.0.format_event(ctx, w, event) };
        let mut line = String::new();
        self.0.format_event(ctx, Writer::new(&mut line), event)?;
        match line.strip_prefix('{') {
            Some(rest) => write!(w, "{{\"span\":{{\"id\":\"{id:016X}\",\"name\":\"request\"}},{rest}"),
            None => w.write_str(&line),
        }
    }
}
