//! Writes generated files all-or-nothing: every file goes to a temporary name in the output
//! directory first, and only when all are written are they renamed over the old ones.

use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// One generated file: its name relative to the output directory, and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFile {
    pub name: String,
    pub contents: Vec<u8>,
}

/// Writes `files` into `dir` (created if missing). On error, no file in `dir` has changed.
pub fn write_outputs(dir: &Path, files: &[OutputFile]) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::with_capacity(files.len());
    let result = (|| {
        for f in files {
            let target = dir.join(&f.name);
            if target.is_dir() {
                return Err(io::Error::other(format!("{} is a directory", target.display())));
            }
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent)?;
            }
            let tmp = temp_path(&target);
            staged.push((tmp.clone(), target));
            let mut out = fs::File::create(&tmp)?;
            out.write_all(&f.contents)?;
            out.sync_all()?;
        }
        Ok(())
    })();
    if let Err(e) = result {
        for (tmp, _) in &staged {
            let _ = fs::remove_file(tmp);
        }
        return Err(e);
    }
    for (tmp, target) in &staged {
        fs::rename(tmp, target)?;
    }
    Ok(())
}

fn temp_path(target: &Path) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    target.with_file_name(format!(".{name}.regen-tmp-{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_leaves_existing_files_alone() {
        let dir = std::env::temp_dir().join(format!("regen-write-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("a.txt"), "old").unwrap();
        // A directory where the second file should go makes its write fail.
        fs::create_dir_all(dir.join("blocked")).unwrap();
        let files = [
            OutputFile { name: "a.txt".into(), contents: b"new".to_vec() },
            OutputFile { name: "blocked".into(), contents: b"x".to_vec() },
            OutputFile { name: "a.txt/under-a-file".into(), contents: b"x".to_vec() },
        ];
        assert!(write_outputs(&dir, &files).is_err());
        assert!(write_outputs(&dir, &[files[0].clone(), files[2].clone()]).is_err());
        assert_eq!(fs::read_to_string(dir.join("a.txt")).unwrap(), "old");
        let leftovers: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers.len(), 2, "{leftovers:?}");
        write_outputs(&dir, &files[..1]).unwrap();
        assert_eq!(fs::read_to_string(dir.join("a.txt")).unwrap(), "new");
        fs::remove_dir_all(&dir).unwrap();
    }
}
