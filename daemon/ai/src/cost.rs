//! What a request cost, from its token usage and the model's prices.

use rein_protocol::message::{Cost, Usage};
use rein_protocol::model::ModelCost;

/// The dollar cost of `usage` at `price` (dollars per million tokens).
pub fn cost_of(usage: &Usage, price: &ModelCost) -> Cost {
    let per_token = |tokens: u64, per_million: f64| tokens as f64 * per_million / 1_000_000.0;
    let input = per_token(usage.input, price.input);
    let output = per_token(usage.output, price.output);
    let cache_read = per_token(usage.cache_read, price.cache_read);
    let cache_write = per_token(usage.cache_write, price.cache_write);
    Cost {
        input,
        output,
        cache_read,
        cache_write,
        total: input + output + cache_read + cache_write,
    }
}
