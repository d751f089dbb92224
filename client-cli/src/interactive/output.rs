//! Printing above the prompt: whole lines through rustyline's external printer while the
//! editor owns the terminal, or plain standard output when there is no terminal.

use crate::render::Chunk;
use rustyline::ExternalPrinter;
use std::io::{IsTerminal, Write};

/// Where the attach prints.
pub(super) struct Output {
    printer: Option<Box<dyn ExternalPrinter + Send>>,
    pending: String,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Output").field("printer", &self.printer.is_some()).finish()
    }
}

impl Output {
    /// Prints through `editor`'s external printer when the keyboard is a terminal.
    pub(super) fn new(editor: &mut rustyline::DefaultEditor) -> Self {
        let printer = if std::io::stdin().is_terminal() {
            editor
                .create_external_printer()
                .ok()
                .map(|printer| Box::new(printer) as Box<dyn ExternalPrinter + Send>)
        } else {
            None
        };
        Self { printer, pending: String::new() }
    }

    /// Rendered chunks: complete lines are printed now, a partial line when it completes.
    pub(super) fn chunks(&mut self, chunks: Vec<Chunk>) {
        for chunk in chunks {
            self.pending.push_str(&chunk.text);
        }
        if let Some(end) = self.pending.rfind('\n') {
            let lines: String = self.pending.drain(..=end).collect();
            self.write(lines);
        }
    }

    /// A message of `rein`'s own, after whatever partial line is pending.
    pub(super) fn print(&mut self, text: &str) {
        self.flush();
        self.write(text.to_string());
    }

    /// Prints a pending partial line.
    pub(super) fn flush(&mut self) {
        if !self.pending.is_empty() {
            let mut text = std::mem::take(&mut self.pending);
            text.push('\n');
            self.write(text);
        }
    }

    fn write(&mut self, text: String) {
        if text.is_empty() {
            return;
        }
        if let Some(printer) = self.printer.as_mut()
            && printer.print(text.clone()).is_ok()
        {
            return;
        }
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    }
}
