//! Terminal setup and restoration. The terminal is restored on every way out: a normal exit,
//! an error, a signal (the runtime handles those) and a panic (the hook below).

use std::io::{self, BufWriter, Stdout, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    BeginSynchronizedUpdate, Clear, ClearType, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen,
    disable_raw_mode, enable_raw_mode,
};
use crossterm::{cursor, execute, queue};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Position;

pub type Backend = CrosstermBackend<BufWriter<Stdout>>;

static ACTIVE: AtomicBool = AtomicBool::new(false);
static PANICKED: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

/// Puts the terminal back as it was. Safe to call more than once, from any thread.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    let _ = execute!(
        out,
        EndSynchronizedUpdate,
        PopKeyboardEnhancementFlags,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// The terminal's settings before raw mode (the descriptor crossterm changes, and its termios),
/// for [`restore_from_signal`].
static SAVED: std::sync::OnceLock<(i32, libc::termios)> = std::sync::OnceLock::new();

/// What [`restore`] sends, as raw bytes: end a synchronized update, pop the keyboard flags,
/// mouse and bracketed paste off, leave the alternate screen, show the cursor.
const RESTORE_BYTES: &[u8] =
    b"\x1b[?2026l\x1b[<1u\x1b[?1006l\x1b[?1015l\x1b[?1003l\x1b[?1002l\x1b[?1000l\x1b[?2004l\x1b[?1049l\x1b[?25h";

fn save_termios() {
    if SAVED.get().is_some() {
        return;
    }
    // crossterm puts standard input in raw mode when it is a terminal.
    // SAFETY: isatty and tcgetattr only read the descriptor's state into `t`.
    unsafe {
        if libc::isatty(libc::STDIN_FILENO) != 1 {
            return;
        }
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(libc::STDIN_FILENO, &mut t) == 0 {
            let _ = SAVED.set((libc::STDIN_FILENO, t));
        }
    }
}

/// [`restore`] for a signal handler (the forced exit on a second signal): system calls only.
/// A terminal that stopped reading may be why keel is being forced out, so the restoring bytes
/// are written without blocking, waiting at most about a second for room; the saved terminal
/// settings are put back in any case.
pub fn restore_from_signal() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    // SAFETY: fcntl, write, poll and tcsetattr are async-signal-safe; the buffers are statics
    // that live for the whole process.
    unsafe {
        let out = libc::STDOUT_FILENO;
        let flags = libc::fcntl(out, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(out, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        let mut done = 0usize;
        let mut waits = 0;
        while done < RESTORE_BYTES.len() && waits < 20 {
            let rest = &RESTORE_BYTES[done..];
            let n = libc::write(out, rest.as_ptr().cast(), rest.len());
            if n > 0 {
                done += n as usize;
                continue;
            }
            let mut pfd = libc::pollfd {
                fd: out,
                events: libc::POLLOUT,
                revents: 0,
            };
            libc::poll(&mut pfd, 1, 50);
            waits += 1;
        }
        if flags >= 0 {
            // The descriptor is shared with the shell that started keel: leave it as it was.
            libc::fcntl(out, libc::F_SETFL, flags);
        }
        if let Some((fd, t)) = SAVED.get() {
            libc::tcsetattr(*fd, libc::TCSANOW, t);
        }
    }
}

/// Whether any thread panicked since the TUI started (the UI then stops drawing and exits).
pub fn panicked() -> bool {
    PANICKED.load(Ordering::SeqCst)
}

fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICKED.store(true, Ordering::SeqCst);
            restore();
            previous(info);
        }));
    });
}

/// The terminal in TUI mode; dropping it restores the terminal.
pub struct Tui {
    pub terminal: Terminal<Backend>,
    presenter: super::present::Presenter,
    /// The cursor as last shown (`None`: hidden), so it is only written when it changes.
    cursor: Option<Position>,
}

impl Tui {
    pub fn enter() -> io::Result<Tui> {
        install_panic_hook();
        save_termios();
        crate::shutdown::set_terminal_restore(restore_from_signal);
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let mut out = BufWriter::with_capacity(1 << 16, io::stdout());
        let setup = execute!(
            out,
            EnterAlternateScreen,
            EnableBracketedPaste,
            EnableMouseCapture,
            // Lets terminals that support it report Shift+Enter; others ignore the request.
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES),
            cursor::Hide
        );
        if let Err(e) = setup {
            restore();
            return Err(e);
        }
        match Terminal::new(CrosstermBackend::new(out)) {
            Ok(terminal) => Ok(Tui {
                terminal,
                presenter: Default::default(),
                cursor: None,
            }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }

    /// Draws one frame as a synchronized update: the terminal shows it all at once, which
    /// is what keeps streaming free of flicker and tearing. Only what changed is written
    /// ([`super::present`]); `f` returns where the cursor goes.
    pub fn draw(&mut self, f: impl FnOnce(&mut ratatui::Frame) -> Option<Position>) -> io::Result<()> {
        let before = self.terminal.get_frame().area();
        self.terminal.autoresize()?;
        let cursor = {
            let mut frame = self.terminal.get_frame();
            if frame.area() != before {
                // A resize cleared the screen.
                self.presenter.reset();
            }
            f(&mut frame)
        };
        let area = self.terminal.current_buffer_mut().area;
        let next = std::mem::replace(self.terminal.current_buffer_mut(), ratatui::buffer::Buffer::empty(area));
        let super::present::Plan { scroll, runs, hashes } = self.presenter.plan(&next);
        let backend = self.terminal.backend_mut();
        queue!(backend, BeginSynchronizedUpdate)?;
        let wrote = scroll.is_some() || !runs.is_empty();
        if let Some(s) = scroll {
            backend.write_all(s.sequence().as_bytes())?;
        }
        for run in runs {
            // Each run starts with an explicit cursor move.
            ratatui::backend::Backend::draw(backend, run.into_iter())?;
        }
        if cursor != self.cursor || (wrote && cursor.is_some()) {
            match cursor {
                Some(p) => {
                    queue!(backend, cursor::MoveTo(p.x, p.y))?;
                    if self.cursor.is_none() {
                        queue!(backend, cursor::Show)?;
                    }
                }
                None => queue!(backend, cursor::Hide)?,
            }
        }
        execute!(backend, EndSynchronizedUpdate)?;
        self.cursor = cursor;
        self.presenter.commit(next, hashes);
        self.terminal.swap_buffers();
        Ok(())
    }

    /// Clears the screen; the next frame is written whole (frames are diffed against the
    /// presenter's copy, not ratatui's). Not `Terminal::clear`: that asks the terminal for the
    /// cursor position, and the answer can be lost (a dropped `EventStream`'s wake-up ends
    /// the read at once), which failed keel after Ctrl+G.
    pub fn clear(&mut self) -> io::Result<()> {
        self.presenter.reset();
        execute!(self.terminal.backend_mut(), Clear(ClearType::All))
    }

    /// Hands the terminal to another program (an editor) until [`Tui::resume`].
    pub fn suspend(&mut self) {
        let _ = self.terminal.backend_mut().flush();
        restore();
    }

    /// Takes the terminal back after [`Tui::suspend`] and repaints from scratch.
    pub fn resume(&mut self) -> io::Result<()> {
        enable_raw_mode()?;
        self.presenter.reset();
        self.cursor = None;
        ACTIVE.store(true, Ordering::SeqCst);
        execute!(
            self.terminal.backend_mut(),
            EnterAlternateScreen,
            EnableBracketedPaste,
            EnableMouseCapture,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES),
            cursor::Hide
        )?;
        self.clear()
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.terminal.backend_mut().flush();
        restore();
    }
}
