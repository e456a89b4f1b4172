//! Two pieces of work on the machine's two cores: the one way each phase that splits its work
//! (parsing, lowering, hashing, emitting, writing) runs it, as rayon's `join` would.

/// Runs `a` on a second thread while `b` runs on this one, and returns both results. A panic in
/// `a` continues on this thread, as it would have had `a` run here.
pub(crate) fn join<A: Send, B>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    std::thread::scope(|scope| {
        let a = scope.spawn(a);
        let b = b();
        (a.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), b)
    })
}
