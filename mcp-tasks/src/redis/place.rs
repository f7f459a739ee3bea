//! Where a new task goes: the live-task limits split over the shards, and the shard with
//! room a refused create moves to (see "Limits over shards" on
//! [`RedisStore`](super::RedisStore)).

use super::{Inner, store_error};
use crate::error::StoreError;
use crate::limits::{Limit, Limits};
use crate::record::{Owner, TaskId};

/// How many ids a create draws before it finds one in the shard it wants; each draw
/// lands there with probability 1/16 at worst, so running out never happens in practice.
const DRAWS: usize = 4096;

/// How many of the shards hold a part of the limits: all of them, or fewer when a limit
/// is smaller than the shard count (so every shard that holds a part of one limit holds
/// a part of the other). At least 1.
pub(super) fn active(limits: &Limits, shards: u16) -> u16 {
    let m = limits
        .max_live_tasks_per_owner
        .min(limits.max_live_tasks_total)
        .min(usize::from(shards))
        .max(1);
    u16::try_from(m).unwrap_or(1)
}

/// The part of `limit` that `shard` holds when the first `active` shards share it.
pub(super) fn quota(limit: usize, active: u16, shard: u16) -> usize {
    if shard >= active {
        return 0;
    }
    let m = usize::from(active);
    limit / m + usize::from(usize::from(shard) < limit % m)
}

/// One shard's live-task counts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Counts {
    pub owner: u64,
    pub total: u64,
}

/// Where a refused create may go.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Room {
    /// This shard has room for the owner and in total.
    Shard(u16),
    /// No shard has: the create is refused with this limit.
    Full(Limit),
}

/// A random task id whose shard is `shard`.
pub(super) fn id_in_shard(keys: &super::Keys, shard: u16) -> Result<TaskId, StoreError> {
    for _ in 0..DRAWS {
        let id = TaskId::random().map_err(StoreError::backend)?;
        if keys.shard_of(&id) == shard {
            return Ok(id);
        }
    }
    Err(StoreError::backend(format!(
        "redis: no task id drawn for shard {shard}"
    )))
}

/// A uniformly random index below `n` (`n` > 0).
pub(super) fn pick(n: usize) -> usize {
    let r = getrandom::u64().unwrap_or(0);
    usize::try_from(r % n.max(1) as u64).unwrap_or(0)
}

/// Which shard has room, given every shard's counts; `refused` is the limit the last
/// script refused with, said when the sums have room but no single shard has.
pub(super) fn room(limits: &Limits, active: u16, counts: &[Counts], refused: Limit) -> Room {
    let fits = |s: u16, c: &Counts| {
        (c.owner as usize) < quota(limits.max_live_tasks_per_owner, active, s)
            && (c.total as usize) < quota(limits.max_live_tasks_total, active, s)
    };
    let open: Vec<u16> = (0..active)
        .filter(|s| counts.get(usize::from(*s)).is_some_and(|c| fits(*s, c)))
        .collect();
    if !open.is_empty() {
        return Room::Shard(open[pick(open.len())]);
    }
    let owner: u64 = counts.iter().map(|c| c.owner).sum();
    let total: u64 = counts.iter().map(|c| c.total).sum();
    if owner as usize >= limits.max_live_tasks_per_owner {
        Room::Full(Limit::LiveTasksPerOwner)
    } else if total as usize >= limits.max_live_tasks_total {
        Room::Full(Limit::LiveTasksTotal)
    } else {
        Room::Full(refused)
    }
}

impl Inner {
    /// The shards of the limits (see [`active`]).
    pub(super) fn active_shards(&self) -> u16 {
        active(&self.limits, self.keys.shards())
    }

    /// Every shard's live-task counts: `owner`'s and the shard's total.
    pub(super) async fn shard_counts(&self, owner: &Owner) -> Result<Vec<Counts>, StoreError> {
        let shards = 0..self.keys.shards();
        let mine = futures::future::try_join_all(shards.clone().map(|s| {
            let mut conn = self.conn();
            let cmd = redis::cmd("HGET")
                .arg(self.keys.live_per_owner(s))
                .arg(owner.as_str())
                .to_owned();
            async move { cmd.query_async::<Option<u64>>(&mut conn).await }
        }));
        let totals = futures::future::try_join_all(shards.map(|s| {
            let mut conn = self.conn();
            let cmd = redis::cmd("HLEN").arg(self.keys.live(s)).to_owned();
            async move { cmd.query_async::<u64>(&mut conn).await }
        }));
        let (mine, totals) = futures::future::try_join(mine, totals)
            .await
            .map_err(store_error)?;
        Ok(mine
            .into_iter()
            .zip(totals)
            .map(|(owner, total)| Counts {
                owner: owner.unwrap_or(0),
                total,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(owner: usize, total: usize) -> Limits {
        Limits {
            max_live_tasks_per_owner: owner,
            max_live_tasks_total: total,
            ..Limits::default()
        }
    }

    #[test]
    fn quotas_add_up_to_the_limit() {
        for (owner, total) in [
            (1000, 1_000_000),
            (3, 100_000),
            (100_000, 4),
            (0, 5),
            (17, 33),
        ] {
            let l = limits(owner, total);
            let m = active(&l, 16);
            let sum = |limit| (0..16).map(|s| quota(limit, m, s)).sum::<usize>();
            assert_eq!(sum(owner), owner);
            assert_eq!(sum(total), total);
            // Every shard that holds a part of one limit holds a part of the other.
            for s in (0..16).filter(|_| owner > 0) {
                assert_eq!(quota(owner, m, s) > 0, quota(total, m, s) > 0);
            }
        }
        assert_eq!(quota(7, 1, 0), 7);
    }

    #[test]
    fn a_refused_create_finds_room_or_names_the_full_limit() {
        let l = limits(3, 100);
        let m = active(&l, 16);
        assert_eq!(m, 3);
        let c = |owner, total| Counts { owner, total };
        let counts = [c(1, 5), c(0, 2), c(1, 1)];
        assert_eq!(room(&l, m, &counts, Limit::LiveTasksTotal), Room::Shard(1));
        let full = [c(1, 5), c(1, 2), c(1, 1)];
        assert_eq!(
            room(&l, m, &full, Limit::LiveTasksTotal),
            Room::Full(Limit::LiveTasksPerOwner)
        );
    }
}
