//! The `xtask` binary given a bad command line: it says what was wrong, then the usage, and
//! exits 2 without doing anything (issue 13: it printed the usage alone).

use std::process::Command;

fn xtask(args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).output().expect("xtask runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (output.status.code(), text(&output.stdout), text(&output.stderr))
}

#[test]
fn a_bad_command_line_says_what_was_wrong_then_the_usage() {
    for (args, first) in [
        (&["bogus"][..], r#"xtask: unknown command "bogus""#),
        (&["fixture"][..], "xtask: fixture needs --torch X.Y.Z"),
        (&[][..], "xtask: no command given"),
    ] {
        let (code, stdout, stderr) = xtask(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stdout, "", "{args:?}");
        let mut lines = stderr.lines();
        assert_eq!(lines.next(), Some(first), "{args:?}: {stderr}");
        assert_eq!(lines.next(), Some(""), "{stderr}");
        assert_eq!(lines.next(), Some("usage: cargo xtask <command>"), "{stderr}");
        assert!(stderr.contains("\n  fixture --torch X.Y.Z "), "{stderr}");
    }
    let (code, stdout, _) = xtask(&["--help"]);
    assert_eq!((code, stdout.lines().next()), (Some(0), Some("usage: cargo xtask <command>")));
}
