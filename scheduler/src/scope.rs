//! Names in scope while walking the loop IR, each bound to what a pass knows of it (Halide's
//! `Scope<T>`): bounds inference binds a variable to its symbolic interval, the simplifier to
//! its constant interval and a let's value. Innermost last; a name bound again shadows the
//! outer binding until it is popped.
//!
//! The simplifier takes a copy of the scope at every `let` and statement it enters, and an
//! app-sized pipeline has hundreds of region lets in scope: a copy shares each binding's name
//! (an `Rc`; cloning names was a fifth of the time lowering a local Laplacian took), and a
//! lookup compares a hash of the name before the name (walking hundreds of bindings per
//! variable was another fifth).

use std::rc::Rc;

/// The bindings in scope, innermost last.
#[derive(Clone, Debug)]
pub(crate) struct Scope<T> {
    bindings: Vec<Binding<T>>,
}

#[derive(Clone, Debug)]
struct Binding<T> {
    hash: u64,
    name: Rc<str>,
    value: T,
}

// Not derived: a derived `Default` would ask `T: Default`.
impl<T> Default for Scope<T> {
    fn default() -> Self {
        Scope {
            bindings: Vec::new(),
        }
    }
}

fn name_hash(name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

impl<T> Scope<T> {
    /// Binds `name` to `value`, innermost.
    pub(crate) fn push(&mut self, name: &str, value: T) {
        self.bindings.push(Binding {
            hash: name_hash(name),
            name: name.into(),
            value,
        });
    }

    /// Unbinds the innermost name.
    pub(crate) fn pop(&mut self) {
        self.bindings.pop();
    }

    /// What the innermost binding of `name` holds, if it is bound.
    pub(crate) fn get(&self, name: &str) -> Option<&T> {
        self.position(name).map(|at| &self.bindings[at].value)
    }

    /// What the innermost binding of `name` holds, and a test of whether a name was bound
    /// again inside it (so that an expression recorded at that binding may mean something
    /// else here).
    pub(crate) fn get_with_rebound(&self, name: &str) -> Option<(&T, impl Fn(&str) -> bool + '_)> {
        let at = self.position(name)?;
        let inner = &self.bindings[at + 1..];
        let rebound = move |var: &str| {
            // Most lookups are of the innermost binding: nothing to hash.
            !inner.is_empty() && {
                let hash = name_hash(var);
                inner.iter().any(|b| b.hash == hash && &*b.name == var)
            }
        };
        Some((&self.bindings[at].value, rebound))
    }

    /// The position of the innermost binding of `name`.
    fn position(&self, name: &str) -> Option<usize> {
        let hash = name_hash(name);
        self.bindings
            .iter()
            .rposition(|b| b.hash == hash && &*b.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::Scope;

    #[test]
    fn an_inner_binding_shadows_until_popped() {
        let mut scope = Scope::default();
        scope.push("x", 1);
        scope.push("y", 2);
        scope.push("x", 3);
        assert_eq!(scope.get("x"), Some(&3));
        scope.pop();
        assert_eq!(scope.get("x"), Some(&1));
        assert_eq!(scope.get("z"), None);
    }

    #[test]
    fn rebound_names_are_those_bound_inside_the_binding() {
        let mut scope = Scope::default();
        scope.push("a", 0);
        scope.push("t", 1);
        scope.push("b", 2);
        let (value, rebound) = scope.get_with_rebound("t").unwrap();
        assert_eq!(*value, 1);
        assert!(rebound("b"));
        assert!(!rebound("a"));
        assert!(!rebound("t"));
    }
}
