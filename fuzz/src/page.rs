//! The page-planning checks of the `page_plan` target: page planning on arbitrary numbers, and
//! full pagination of a ranking under a byte budget (every position exactly once, every page
//! within budget, byte-exact sizes).

use arbitrary::{Arbitrary, Unstructured};
use toolproxy_core::page::{page_size, plan_page};

/// Arbitrary page-planning input.
#[derive(Debug, Clone, Arbitrary)]
pub struct PageInput {
    sizes: Vec<i64>,
    total: i64,
    offset: i64,
    budget: i64,
    /// Small entry sizes (2..=4097 bytes each) for the full-pagination check.
    ranking: Vec<u16>,
    small_budget: u16,
}

/// Plans pages from arbitrary numbers (must never panic; every `Ok` plan is consistent), then
/// paginates a ranking of small entries under a budget and checks exact-once coverage, the
/// budget and the byte-exact size against the real JSON page.
pub fn check_page(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(input) = PageInput::arbitrary(&mut u) else {
        return;
    };
    if let Ok(plan) = plan_page(&input.sizes, input.total, input.offset, input.budget) {
        assert!(plan.count <= input.sizes.len());
        assert!(plan.size <= u64::try_from(input.budget).unwrap_or(0) || plan.count == 0);
        if plan.count == 0 && !input.sizes.is_empty() {
            // The first entry alone: the page it would need, over the budget.
            let size = u64::try_from(input.sizes[0]).unwrap_or(0);
            assert!(plan.size > u64::try_from(input.budget).unwrap_or(0));
            assert_eq!(
                plan.size,
                page_size(size, 1, input.total as u64, plan.next_offset)
            );
            return;
        }
        let entry_bytes: u64 = input.sizes[..plan.count]
            .iter()
            .map(|&s| s as u64)
            .fold(0u64, u64::saturating_add);
        assert_eq!(
            plan.size,
            page_size(
                entry_bytes,
                plan.count,
                input.total as u64,
                plan.next_offset
            )
        );
    }

    let sizes: Vec<i64> = input
        .ranking
        .iter()
        .take(512)
        .map(|&s| i64::from(s % 4096) + 2)
        .collect();
    let total = sizes.len();
    let budget = i64::from(input.small_budget % 8192) + 36;
    let mut offset = 0usize;
    let mut seen = vec![0u32; total];
    loop {
        let plan = plan_page(&sizes[offset..], total as i64, offset as i64, budget)
            .expect("a valid window");
        if plan.count == 0 && offset < total {
            // The entry cannot fit alone: the caller skips it (search with offset + 1).
            assert!(plan.size > budget as u64);
            seen[offset] += 1;
            offset += 1;
            continue;
        }
        let page = real_page(&sizes[offset..offset + plan.count], total, plan.next_offset);
        assert_eq!(page.len() as u64, plan.size, "page size is not byte-exact");
        // An empty page (nothing left) is the bare frame, which the budget need not cover.
        assert!(
            plan.count == 0 || plan.size <= budget as u64,
            "page over budget"
        );
        for slot in &mut seen[offset..offset + plan.count] {
            *slot += 1;
        }
        match plan.next_offset {
            Some(next) => {
                assert!(plan.count > 0 && next as usize == offset + plan.count);
                offset = next as usize;
            }
            None => {
                assert_eq!(offset + plan.count, total);
                break;
            }
        }
    }
    assert!(
        seen.iter().all(|&n| n == 1),
        "a position was paged twice or never"
    );
}

/// The compact JSON page with entries that are JSON strings of the given sizes.
fn real_page(sizes: &[i64], total: usize, next_offset: Option<u64>) -> String {
    let tools: Vec<String> = sizes
        .iter()
        .map(|&size| format!("\"{}\"", "x".repeat(size as usize - 2)))
        .collect();
    let next = next_offset.map_or_else(|| "null".to_owned(), |n| n.to_string());
    format!(
        "{{\"tools\":[{}],\"total\":{total},\"next_offset\":{next}}}",
        tools.join(",")
    )
}
