//! Byte-exact planning of budgeted search-result pages.
//!
//! A page is the compact JSON object
//!
//! ```text
//! {"tools":[E1,E2,...],"total":T,"next_offset":N}
//! ```
//!
//! where `N` is an integer or `null` and each entry `Ei` has already been serialized by the
//! caller to compact UTF-8 JSON. [`plan_page`] takes entries greedily, in order, while the whole
//! page (with the `next_offset` that the count implies) stays within the byte budget.

use crate::{Error, Result};

/// Bytes of `{"tools":[` + `],"total":` + `,"next_offset":` + `}`.
const FRAME_BYTES: u64 = 10 + 10 + 15 + 1;
/// Bytes of `null`.
const NULL_BYTES: u64 = 4;

/// The outcome of [`plan_page`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagePlan {
    /// Number of entries on the page.
    pub count: usize,
    /// `offset + count` while results remain, else `None` (`null`).
    pub next_offset: Option<u64>,
    /// Exact byte size of the page JSON.
    pub size: u64,
}

/// Number of decimal digits of `value`.
fn digits(value: u64) -> u64 {
    u64::from(value.checked_ilog10().unwrap_or(0)) + 1
}

/// The byte size of a page holding entries totalling `entry_bytes` bytes over `count` entries.
pub fn page_size(entry_bytes: u64, count: usize, total: u64, next_offset: Option<u64>) -> u64 {
    let commas = (count as u64).saturating_sub(1);
    FRAME_BYTES
        .saturating_add(entry_bytes)
        .saturating_add(commas)
        .saturating_add(digits(total))
        .saturating_add(next_offset.map_or(NULL_BYTES, digits))
}

fn non_negative(name: &str, value: i64) -> Result<u64> {
    u64::try_from(value)
        .map_err(|_| Error::new(format!("{name} must not be negative, got {value}")))
}

/// Plans the page starting at ranked position `offset` of `total` results.
///
/// `entry_sizes[i]` is the serialized size of the entry at position `offset + i`. Entries are
/// taken in order while the page fits in `budget` bytes. Without entries the result is the
/// empty page with `next_offset` `None`.
///
/// When not even the first entry fits alone, the plan has `count` 0 and `size` the bytes of the
/// page that entry alone would need (more than `budget`): the caller reports that entry, which no
/// page can show. An `offset` at or past `total` with no entries (a stale `next_offset`, a guess)
/// plans the empty page.
///
/// Errors when a number is negative or when entries are given and `offset + entry_sizes.len()`
/// exceeds `total` (a caller's bug, not a model's input).
pub fn plan_page(entry_sizes: &[i64], total: i64, offset: i64, budget: i64) -> Result<PagePlan> {
    let total = non_negative("total", total)?;
    let offset = non_negative("offset", offset)?;
    let budget = non_negative("budget", budget)?;
    if !entry_sizes.is_empty() && offset.saturating_add(entry_sizes.len() as u64) > total {
        return Err(Error::new(format!(
            "offset {offset} plus {} entries exceeds total {total}",
            entry_sizes.len()
        )));
    }
    let next_for = |count: usize| {
        let next = offset.saturating_add(count as u64);
        (next < total).then_some(next)
    };
    let mut plan = PagePlan {
        count: 0,
        next_offset: None,
        size: page_size(0, 0, total, None),
    };
    let mut entry_bytes = 0u64;
    for (index, &size) in entry_sizes.iter().enumerate() {
        let size = u64::try_from(size).map_err(|_| {
            Error::new(format!(
                "entry_sizes[{index}] must not be negative, got {size}"
            ))
        })?;
        entry_bytes = entry_bytes.saturating_add(size);
        let count = index + 1;
        let next_offset = next_for(count);
        let page = page_size(entry_bytes, count, total, next_offset);
        if page > budget {
            if index == 0 {
                plan = PagePlan {
                    count: 0,
                    next_offset,
                    size: page,
                };
            }
            break;
        }
        plan = PagePlan {
            count,
            next_offset,
            size: page,
        };
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Builds the real page JSON with entries of the given sizes (JSON strings of `x`s).
    fn build_page(sizes: &[i64], total: u64, next_offset: Option<u64>) -> String {
        let tools: Vec<String> = sizes
            .iter()
            .map(|&size| {
                assert!(size >= 2);
                format!("\"{}\"", "x".repeat(size as usize - 2))
            })
            .collect();
        let next = next_offset.map_or("null".to_owned(), |n| n.to_string());
        format!(
            "{{\"tools\":[{}],\"total\":{total},\"next_offset\":{next}}}",
            tools.join(",")
        )
    }

    #[test]
    fn empty_page() {
        let plan = plan_page(&[], 0, 0, 1024).unwrap();
        assert_eq!(
            plan,
            PagePlan {
                count: 0,
                next_offset: None,
                size: r#"{"tools":[],"total":0,"next_offset":null}"#.len() as u64
            }
        );
        let plan = plan_page(&[], 12345, 12345, 1024).unwrap();
        assert_eq!(plan.size, build_page(&[], 12345, None).len() as u64);
        assert_eq!(plan.next_offset, None);
    }

    #[test]
    fn simple_pages() {
        let plan = plan_page(&[10, 10, 10], 3, 0, 1024).unwrap();
        assert_eq!((plan.count, plan.next_offset), (3, None));
        assert_eq!(plan.size, build_page(&[10, 10, 10], 3, None).len() as u64);
        let plan = plan_page(&[10, 10], 5, 0, 1024).unwrap();
        assert_eq!((plan.count, plan.next_offset), (2, Some(2)));
        // Exactly at the budget is allowed, one byte less is not.
        let exact = build_page(&[10, 20], 5, Some(2)).len() as i64;
        assert_eq!(plan_page(&[10, 20, 30], 5, 0, exact).unwrap().count, 2);
        assert_eq!(plan_page(&[10, 20, 30], 5, 0, exact - 1).unwrap().count, 1);
    }

    #[test]
    fn next_offset_digits_are_counted_for_the_count_taken() {
        // Taking the last result switches next_offset from digits to `null`, which is longer
        // than a single digit.
        let sizes = [2, 2];
        let with_null = build_page(&sizes, 2, None).len() as i64;
        let plan = plan_page(&sizes, 2, 0, with_null - 1).unwrap();
        assert_eq!((plan.count, plan.next_offset), (1, Some(1)));
        assert_eq!(plan.size, build_page(&sizes[..1], 2, Some(1)).len() as u64);
        // 99 -> 100 grows next_offset by one digit.
        let plan = plan_page(&[5], 1000, 99, 1024).unwrap();
        assert_eq!(plan.next_offset, Some(100));
        assert_eq!(plan.size, build_page(&[5], 1000, Some(100)).len() as u64);
    }

    #[test]
    fn first_entry_too_large() {
        let plan = plan_page(&[40170, 5], 10, 0, 32768).unwrap();
        let needed = build_page(&[40170], 10, Some(1)).len() as u64;
        assert_eq!(plan.count, 0);
        assert_eq!(plan.size, needed);
        assert_eq!(plan.next_offset, Some(1));
    }

    #[test]
    fn offset_past_total_without_entries_is_the_empty_page() {
        for (total, offset) in [(0, 1), (5, 5), (5, 10), (0, i64::MAX)] {
            let plan = plan_page(&[], total, offset, 1024).unwrap();
            assert_eq!(plan.count, 0);
            assert_eq!(plan.next_offset, None);
            assert_eq!(plan.size, build_page(&[], total as u64, None).len() as u64);
        }
    }

    #[test]
    fn invalid_numbers() {
        assert!(plan_page(&[], -1, 0, 1024)
            .unwrap_err()
            .message()
            .contains("total"));
        assert!(plan_page(&[], 1, -1, 1024)
            .unwrap_err()
            .message()
            .contains("offset"));
        assert!(plan_page(&[], 1, 0, -1)
            .unwrap_err()
            .message()
            .contains("budget"));
        assert!(plan_page(&[3, -2], 5, 0, 1024)
            .unwrap_err()
            .message()
            .contains("entry_sizes[1]"));
        assert!(plan_page(&[3, 3], 1, 0, 1024)
            .unwrap_err()
            .message()
            .contains("exceeds total"));
        let huge = plan_page(&[i64::MAX, i64::MAX], i64::MAX, 0, i64::MAX).unwrap();
        assert_eq!(huge.count, 0);
    }

    #[test]
    fn size_formula_matches_json_across_digit_counts() {
        for total in [1u64, 9, 10, 11, 99, 100, 101, 12_345, 1_000_000] {
            for offset in [0, total / 2, total.saturating_sub(1)] {
                let sizes = [2i64, 7, 13];
                let count = sizes.len().min((total - offset) as usize);
                let next = (offset + (count as u64) < total).then_some(offset + count as u64);
                let plan =
                    plan_page(&sizes[..count], total as i64, offset as i64, 1 << 20).unwrap();
                assert_eq!(plan.next_offset, next);
                assert_eq!(
                    plan.size,
                    build_page(&sizes[..count], total, next).len() as u64
                );
            }
        }
    }

    /// Sizes of one entry alone on a page starting at `position`.
    fn alone(size: i64, position: u64, total: u64) -> u64 {
        let next = (position + 1 < total).then_some(position + 1);
        page_size(size as u64, 1, total, next)
    }

    proptest! {
        #[test]
        fn pages_cover_every_position_once(
            sizes in prop::collection::vec(2i64..400, 0..120),
            limit in 1usize..12,
            budget in 60i64..2000,
        ) {
            let total = sizes.len() as u64;
            // Raise the budget until every entry fits alone (the documented precondition).
            let needed = sizes
                .iter()
                .enumerate()
                .map(|(i, &s)| alone(s, i as u64, total))
                .max()
                .unwrap_or(0);
            let budget = budget.max(needed as i64);
            let mut seen = Vec::new();
            let mut offset = 0u64;
            let mut pages = 0;
            loop {
                let start = offset as usize;
                let end = (start + limit).min(sizes.len());
                let window = &sizes[start..end];
                let plan = plan_page(window, total as i64, offset as i64, budget).unwrap();
                prop_assert!(plan.size <= budget as u64);
                prop_assert_eq!(
                    plan.size,
                    build_page(&window[..plan.count], total, plan.next_offset).len() as u64
                );
                if !window.is_empty() {
                    prop_assert!(plan.count >= 1);
                }
                seen.extend(start..start + plan.count);
                pages += 1;
                prop_assert!(pages <= sizes.len() + 1);
                match plan.next_offset {
                    Some(next) => {
                        prop_assert_eq!(next, offset + plan.count as u64);
                        offset = next;
                    }
                    None => break,
                }
            }
            prop_assert_eq!(seen, (0..sizes.len()).collect::<Vec<_>>());
        }

        #[test]
        fn greedy_takes_the_longest_fitting_prefix(
            sizes in prop::collection::vec(2i64..300, 1..20),
            extra in 0u64..50,
            offset in 0u64..2000,
            budget in 40i64..3000,
        ) {
            let total = offset + sizes.len() as u64 + extra;
            let plan = plan_page(&sizes, total as i64, offset as i64, budget).unwrap();
            if plan.count == 0 {
                prop_assert!(alone(sizes[0], offset, total) > budget as u64);
                prop_assert_eq!(plan.size, alone(sizes[0], offset, total));
            } else {
                {
                    prop_assert!(plan.size <= budget as u64);
                    let next = |count: usize| {
                        let n = offset + (count as u64);
                        (n < total).then_some(n)
                    };
                    prop_assert_eq!(plan.next_offset, next(plan.count));
                    prop_assert_eq!(
                        plan.size,
                        build_page(&sizes[..plan.count], total, plan.next_offset).len() as u64
                    );
                    if plan.count < sizes.len() {
                        let bigger = &sizes[..=plan.count];
                        let size = build_page(bigger, total, next(plan.count + 1)).len() as u64;
                        prop_assert!(size > budget as u64);
                    }
                }
            }
        }
    }
}
