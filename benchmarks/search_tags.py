"""Time of the search task's six rewards (`sweet_rl.envs.search.reward_components`) on messages full of unclosed tags:
the tag parser of today (`xml_fields`, one scan per tag) against the regular expression it replaced, which looked for
a closer from every opener to the end of the message and so took time quadratic in the number of unclosed openers.

Each episode is the question, a message of `n` unclosed `<tool>` openers, an error result and the same message
again. Prints, per `n`, the seconds of each parser (best of `--repeats`) and their ratio; not a test.

    python benchmarks/search_tags.py                   # n = 500, 1000, 2000, 4000
    python benchmarks/search_tags.py --sizes 2000 --repeats 5
"""
import argparse, re, time

from sweet_rl.envs import search

_OLD_FIELD = re.compile(r'<(reasoning|tool|answer)>(.*?)</\1>', re.S)


def old_xml_fields(message:str) -> dict:
    "The parser before: one regular expression over the three tags, so a tag inside another was never read."
    out = {t: [] for t in search.TAGS}
    for m in _OLD_FIELD.finditer(message): out[m.group(1)].append(m.group(2))
    return out


def best_time(history:list, repeats:int) -> float:
    best = float('inf')
    for _ in range(repeats):
        t0 = time.perf_counter(); search.reward_components(history, ['Lima'])
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sizes', default='500,1000,2000,4000', help='comma-separated numbers of unclosed openers')
    ap.add_argument('--repeats', type=int, default=3)
    args = ap.parse_args()
    new_xml_fields = search.xml_fields
    print(f"{'openers':>8} {'old s':>9} {'new s':>9} {'old/new':>9}")
    for n in [int(x) for x in args.sizes.split(',')]:
        flood = '<tool>' * n
        history = [{'role': 'user', 'content': 'What is the capital of Peru?'}, {'role': 'assistant', 'content': flood},
                   {'role': 'user', 'content': f'<result>\n{search.NO_TOOL_CALL}\n</result>'}, {'role': 'assistant', 'content': flood}]
        try:
            search.xml_fields = old_xml_fields  # the rewards look the parser up in the module at each call
            old = best_time(history, args.repeats)
        finally: search.xml_fields = new_xml_fields
        new = best_time(history, args.repeats)
        print(f"{n:>8} {old:>9.4f} {new:>9.5f} {old / new:>9.0f}")


if __name__ == '__main__': main()
