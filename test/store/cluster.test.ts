import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ask } from '../helpers/client.js';
import { hasRedisCluster, startCluster, type TestCluster } from '../helpers/cluster.js';
import { keysYaml, writeConfig } from '../helpers/fixture.js';
import {
  burst,
  claimSlot,
  inRanges,
  lookup,
  nowS,
  type Sent,
  sleep,
  steadyLookups,
  tally,
} from '../helpers/fleet.js';
import { freePort, requires } from '../helpers/optional.js';
import { type Served, serve } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * CONTRACT §12 with real processes: six `redis-server --cluster-enabled yes` made a cluster by
 * `redis-cli --cluster create --cluster-replicas 1`, three gateways; a master SIGKILLed under
 * load, slots resharded under load, a master restarted empty. One cluster for the whole file, the
 * tests in order. Each test prints its figures (replays admitted, admitted of 40, answers, seconds).
 */
const PREFIX = 'lg:';
const CUSTOMERS = 1000;
const LIMIT = 40;
/** Steady load uses customers below this (none twice in a second); the restart test the ones above. */
const STEADY = 800;
/** The first test's customers: from here, 30 of them; the restart test's from ONCE + 50. */
const ONCE = 800;
const leads = `leads:\n${Array.from({ length: CUSTOMERS }, (_, i) => `  - { _id: "lead-${i}", customer_id: "cust-${i}" }`).join('\n')}\n`;
/** Each test's own key, limited to LIMIT an hour: the tests run alone or in order alike. */
const BURST_KEYS = ['steady', 'failover', 'reshard'].map((name, i) => ({
  name: `burst-${name}`,
  key: `sk_burst_${name}_${'0'.repeat(20)}${i}`,
}));
const [STEADY_KEY, FAILOVER_KEY, RESHARD_KEY] = BURST_KEYS.map((k) => k.key) as [string, string, string];
const BUCKET = `${PREFIX}rl:per-burst:key:burst-failover`;
const report = (what: string, figures: Record<string, unknown>) =>
  process.stderr.write(`[cluster ${what}] ${JSON.stringify(figures)}\n`);
const admitted = (statuses: number[]) => statuses.filter((s) => s === 200).length;
const replaysAdmitted = (list: readonly Sent[]) => list.filter((s) => s.replay === '200').length;

describe.runIf(requires('redis-cli', hasRedisCluster, 'Debian: apt-get install redis-server redis-tools'))(
  'Redis Cluster: three gateways, six nodes',
  () => {
    let upstream: RecordingUpstream;
    let cluster: TestCluster;
    const gateways: Served[] = [];
    beforeAll(async () => {
      upstream = await startRecordingUpstream();
      cluster = await startCluster();
      // The first listed node never answers: any one that answers is enough.
      const nodes = [`127.0.0.1:${await freePort()}`, ...cluster.nodes.slice(0, 2).map((n) => n.address)];
      const file = writeConfig({
        upstream: upstream.url,
        leads,
        extra: `state:
  redis:
    cluster: { nodes: [${nodes.map((n) => `"${n}"`).join(', ')}] }
    key_prefix: "${PREFIX}"
    timeout_ms: 500
digest: { single_use: true, on_store_error: deny }
rate_limits:
  on_store_error: deny
  policies:
    - { name: per-burst, by: key, limit: ${LIMIT}, window_s: 3600, keys: [${BURST_KEYS.map((k) => k.name).join(', ')}] }`,
        keys: `${keysYaml()}${BURST_KEYS.map((k) => `  - { name: ${k.name}, key: "${k.key}", access_type: READ, purpose: SERVER, signing_secret: "${k.name}-secret-000000000000000" }\n`).join('')}`,
      });
      for (let i = 0; i < 3; i++) gateways.push(await serve(file));
      for (const gw of gateways) {
        let answer = '';
        for (let i = 0; i < 100 && answer !== '200'; i++) {
          answer = await lookup(gw.apiPort, i, nowS());
          if (answer !== '200') await sleep(100);
        }
        expect(answer).toBe('200');
      }
    }, 90_000);
    afterAll(async () => {
      await Promise.all(gateways.map((g) => g.stop()));
      await cluster?.stop();
      await upstream?.close();
    });

    it('single use and a limit exact across three gateways, each claim on one slot of every master', async () => {
      const ts = nowS();
      const once = await Promise.all(
        Array.from({ length: 30 }, (_, c) =>
          Promise.all(gateways.map((gw) => lookup(gw.apiPort, ONCE + c, ts))),
        ),
      );
      for (const answers of once) {
        expect(
          answers.filter((a) => a === '200'),
          answers.join(),
        ).toHaveLength(1);
        expect(
          answers.filter((a) => a === '401 replayed_digest'),
          answers.join(),
        ).toHaveLength(2);
      }
      const statuses = await burst(gateways, STEADY_KEY, 3 * LIMIT);
      expect(admitted(statuses)).toBe(LIMIT);
      expect(statuses.filter((s) => s === 429)).toHaveLength(2 * LIMIT);
      // Claims spread over every master.
      for (const m of await cluster.masters()) {
        expect(Number((await cluster.cli(m.port, 'dbsize')).trim())).toBeGreaterThan(0);
      }
      report('steady', { admittedOf40: admitted(statuses), sameDigestAtThreeGateways: 'one 200 each' });
    }, 60_000);

    it('a master SIGKILLed under load: no replay admitted, the limit kept, only 200, 503 or a stale stamp', async () => {
      const before = await burst(gateways, FAILOVER_KEY, 3 * LIMIT);
      expect(admitted(before)).toBe(LIMIT);
      const victim = await cluster.masterOf(BUCKET);
      const ranges = (await cluster.masters()).find((m) => m.port === victim)?.slots ?? '';
      expect((await cluster.cli(victim, 'exists', BUCKET)).trim()).toBe('1');
      await sleep(1_000); // the bucket's last write replicated
      const load = steadyLookups(gateways, PREFIX, STEADY);
      await sleep(1_000);
      const killedAt = Date.now();
      await cluster.kill(victim);
      // When the cluster itself has promoted the replica.
      let promotedAt = 0;
      for (let i = 0; i < 300 && promotedAt === 0; i++) {
        const m = await cluster.masters().catch(() => []);
        if (m.some((x) => x.port !== victim && x.slots === ranges)) promotedAt = Date.now();
        else await sleep(50);
      }
      expect(promotedAt).toBeGreaterThan(0);
      let recoveredAt = 0;
      for (let i = 0; i < 300 && recoveredAt === 0; i++) {
        await sleep(50);
        recoveredAt =
          load.sent.find((s) => s.sent > promotedAt && inRanges(s.slot, ranges) && s.answer === '200')?.at ??
          0;
      }
      await sleep(1_000);
      const sent = await load.stop();
      const after = await burst(gateways, FAILOVER_KEY, 3 * LIMIT);

      const during = sent.filter((s) => s.at > killedAt);
      for (const s of during)
        expect(['200', '503 store_unavailable', '401 stale_timestamp']).toContain(s.answer);
      // A stale stamp only for a digest stamped before the new master's epoch: before the promotion.
      for (const s of during.filter((x) => x.answer === '401 stale_timestamp')) {
        expect(s.stamp * 1000).toBeLessThanOrEqual(recoveredAt);
        expect(inRanges(s.slot, ranges)).toBe(true);
      }
      expect(replaysAdmitted(sent)).toBe(0);
      for (const s of sent.filter((x) => x.replay !== null)) {
        expect(['401 replayed_digest', '401 stale_timestamp', '503 store_unavailable']).toContain(s.replay);
      }
      expect(admitted(after)).toBe(0);
      expect(recoveredAt).toBeGreaterThan(0);
      // The promoted replica's shard began again, for the gateways that claimed on it.
      expect(Math.max(...(await Promise.all(gateways.map((g) => restarts(g)))))).toBeGreaterThanOrEqual(1);
      // The client alone asks for the slot map 5 s after a master stops answering; the link asks
      // every 250 ms, so the shard serves soon after the cluster promoted its replica.
      expect(recoveredAt - promotedAt).toBeLessThan(2_500);
      // Other shards kept serving while the victim's slots had no master.
      const gap = during.filter((s) => s.at < promotedAt);
      expect(gap.filter((s) => !inRanges(s.slot, ranges) && s.answer === '200').length).toBeGreaterThan(0);
      report('failover', {
        replaysAdmitted: replaysAdmitted(sent),
        admittedAfterOf40: admitted(after),
        answersAfterKill: tally(during),
        secondsToPromotion: (promotedAt - killedAt) / 1000,
        secondsToRecovery: (recoveredAt - killedAt) / 1000,
      });
      await cluster.restart(victim); // back as a replica of the promoted one
      await cluster.waitHealthy();
    }, 90_000);

    it('slots resharded under load: no replay, the limit exact, only 200, 429 or 503', async () => {
      const masters = await cluster.masters();
      const [from, to] = [masters[0], masters[1]];
      if (from === undefined || to === undefined) throw new Error('three masters expected');
      const restartsBefore = await Promise.all(gateways.map((g) => restarts(g)));
      const load = steadyLookups(gateways, PREFIX, STEADY);
      await sleep(500);
      const startedAt = Date.now();
      const resharding = cluster.cli(
        from.port,
        '--cluster',
        'reshard',
        `127.0.0.1:${from.port}`,
        '--cluster-from',
        from.id,
        '--cluster-to',
        to.id,
        '--cluster-slots',
        '1500',
        '--cluster-yes',
      );
      await sleep(1_000);
      const statuses = await burst(gateways, RESHARD_KEY, 3 * LIMIT);
      await resharding;
      const doneAt = Date.now();
      await sleep(1_500);
      const sent = await load.stop();
      const toNow = (await cluster.masters()).find((m) => m.id === to.id)?.slots ?? '';
      expect(toNow).not.toBe(to.slots);
      // Claims on the slots that moved (their tags' markers with them) admitted after the move,
      // and no shard counted as having begun again.
      const onMoved = sent.filter(
        (s) => inRanges(s.slot, from.slots) && inRanges(s.slot, toNow) && s.at > doneAt,
      );
      expect(onMoved.filter((s) => s.answer === '200').length).toBeGreaterThan(0);
      expect(await Promise.all(gateways.map((g) => restarts(g)))).toEqual(restartsBefore);
      for (const s of sent) expect(['200', '503 store_unavailable']).toContain(s.answer);
      expect(replaysAdmitted(sent)).toBe(0);
      expect(admitted(statuses)).toBe(LIMIT);
      for (const s of statuses) expect([200, 429]).toContain(s);
      report('reshard', {
        replaysAdmitted: replaysAdmitted(sent),
        admittedOf40: admitted(statuses),
        answers: tally(sent),
        secondsResharding: (doneAt - startedAt) / 1000,
        admittedOnMovedSlotsAfter: onMoved.filter((s) => s.answer === '200').length,
      });
    }, 120_000);

    it('a master restarted empty: its digests stamped before are stale, the other shards unaffected', async () => {
      const victim = (await cluster.masters())[2];
      if (victim === undefined) throw new Error('three masters expected');
      const before = nowS() - 2;
      const onVictim: number[] = [];
      const elsewhere: number[] = [];
      for (let c = ONCE + 50; c < CUSTOMERS && (onVictim.length < 5 || elsewhere.length < 5); c++) {
        (inRanges(claimSlot(PREFIX, c, before), victim.slots) ? onVictim : elsewhere).push(c);
      }
      // Its replica may not take over meanwhile: the master comes back as itself, empty.
      const replicas = await cluster.replicasOf(victim.id);
      expect(replicas.length).toBeGreaterThan(0);
      for (const r of replicas) await cluster.cli(r, 'config', 'set', 'cluster-replica-no-failover', 'yes');
      await cluster.kill(victim.port);
      await cluster.restart(victim.port);
      await cluster.waitHealthy();
      // On a loaded machine the others may see it back as the master of its slots a little after
      // the cluster is whole again (gossip): asked again for up to 10 s before the lookups.
      let stillMaster = false;
      for (let i = 0; i < 50 && !stillMaster; i++) {
        if (i > 0) await sleep(200);
        stillMaster = (await cluster.masters().catch(() => [])).some(
          (m) => m.port === victim.port && m.slots === victim.slots,
        );
      }
      const answers = { victim: [] as string[], others: [] as string[] };
      for (const c of onVictim.slice(0, 5))
        answers.victim.push(await retry503(() => lookup(gateways[0]?.apiPort ?? 0, c, before)));
      for (const c of elsewhere.slice(0, 5))
        answers.others.push(await retry503(() => lookup(gateways[1]?.apiPort ?? 0, c, before)));
      // It came back as the master of its slots, empty.
      expect(stillMaster).toBe(true);
      for (const r of replicas) await cluster.cli(r, 'config', 'set', 'cluster-replica-no-failover', 'no');
      expect(answers.victim).toEqual(Array(5).fill('401 stale_timestamp'));
      expect(answers.others).toEqual(Array(5).fill('200'));
      const later = nowS() + 1;
      await sleep(1_100);
      const fresh =
        Array.from({ length: CUSTOMERS }, (_, c) => c).find((c) =>
          inRanges(claimSlot(PREFIX, c, later), victim.slots),
        ) ?? 0;
      expect(await lookup(gateways[2]?.apiPort ?? 0, fresh, later)).toBe('200');
      expect(await lookup(gateways[0]?.apiPort ?? 0, fresh, later)).toBe('401 replayed_digest');
      report('restart empty', answers);
    }, 90_000);
  },
);

/** `leadgate_state_store_restarts_total` of one gateway. */
async function restarts(gw: Served): Promise<number> {
  const text = (await ask(gw.adminPort, { path: '/metrics' })).text;
  return Number(/^leadgate_state_store_restarts_total (\S+)/m.exec(text)?.[1] ?? Number.NaN);
}

/** A shard's breaker may still be open from the restart: 503 until it answers again. */
async function retry503(fn: () => Promise<string>): Promise<string> {
  let answer = await fn();
  for (let i = 0; i < 40 && answer === '503 store_unavailable'; i++) {
    await sleep(250);
    answer = await fn();
  }
  return answer;
}
