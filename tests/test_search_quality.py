"""Search quality: the intended tool first, in any language, through real `search_proxy_tools` calls.

Small collections run through a real Agent (scripted `FunctionModel`) and the search control;
the BFCL quality floor runs the Rust ranking over the benchmark corpus of `bench/lib/corpus.py`.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import FunctionToolset
from support import Script, page_of, returns

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyConfig, ToolProxyGroup, _core

SEARCH = 'search_proxy_tools'


def tool(tool_name: str, description: str, /, **parameters: str) -> Tool[Any]:
    """A tool with string parameters described by `parameters` (name -> description)."""

    async def run(**kwargs: Any) -> str:
        return tool_name

    schema = {
        'type': 'object',
        'properties': {param: {'type': 'string', 'description': text} for param, text in parameters.items()},
    }
    return Tool.from_schema(run, name=tool_name, description=description, json_schema=schema)


GITHUB = [
    tool('github_get_me', 'Get the profile of the authenticated user'),
    tool(
        'github_add_comment_to_pending_review',
        "Add a review comment to the requester's latest pending pull request review",
        owner='Repository owner',
        repo='Repository name',
        pullNumber='Pull request number',
        path='The relative path to the file that necessitates a comment',
        body='The text of the review comment',
    ),
    tool(
        'github_add_issue_comment',
        'Add a comment to a specific issue in a GitHub repository',
        owner='Repository owner',
        repo='Repository name',
        issue_number='Issue number',
        body='Comment content',
    ),
    tool(
        'github_create_issue',
        'Create a new issue in a GitHub repository',
        owner='Repository owner',
        repo='Repository name',
        title='Issue title',
        body='Issue body content',
    ),
    tool(
        'github_get_issue',
        'Get details of a specific issue in a GitHub repository',
        owner='Repository owner',
        repo='Repository name',
        issue_number='The number of the issue',
    ),
    tool(
        'github_list_issues',
        'List issues in a GitHub repository with filtering options',
        owner='Repository owner',
        repo='Repository name',
        state='Filter by state: open, closed or all',
    ),
    tool(
        'github_create_pull_request',
        'Create a new pull request in a GitHub repository',
        owner='Repository owner',
        repo='Repository name',
        head='Branch containing changes',
        base='Branch to merge into',
    ),
    tool(
        'github_get_pull_request',
        'Get details of a specific pull request in a GitHub repository',
        owner='Repository owner',
        repo='Repository name',
        pullNumber='Pull request number',
    ),
    tool(
        'github_merge_pull_request',
        'Merge a pull request in a GitHub repository',
        owner='Repository owner',
        repo='Repository name',
        pullNumber='Pull request number',
    ),
    tool(
        'github_get_file_contents',
        'Get the contents of a file or directory from a GitHub repository',
        owner='Repository owner',
        repo='Repository name',
        path='Path to file or directory',
    ),
    tool(
        'github_create_or_update_file',
        'Create or update a single file in a GitHub repository',
        owner='Repository owner',
        repo='Repository name',
        path='Path where to create or update the file',
    ),
    tool('github_search_repositories', 'Search for GitHub repositories', query='Search query'),
    tool(
        'github_search_code',
        'Search for code across GitHub repositories',
        q='Search query using GitHub code search syntax',
    ),
    tool(
        'github_list_commits',
        'Get list of commits of a branch in a GitHub repository',
        owner='Repository owner',
        repo='Repository name',
        sha='SHA or branch name',
    ),
    tool(
        'github_create_branch',
        'Create a new branch in a GitHub repository',
        owner='Repository owner',
        repo='Repository name',
        branch='Name for the new branch',
    ),
]

WORK = [
    tool('addPerson', 'Adds a new person (contact) to the CRM.', name='Full name', email='Email address'),
    tool(
        'addActivity',
        'Adds a new activity (call, meeting or task) and links it to a deal, person or organization.',
        subject='Subject of the activity',
        due_date='Due date',
    ),
    tool('addDeal', 'Adds a new deal for a person or organization.', title='Deal title', value='Deal value'),
    tool('getPersonDetails', 'Returns the details of a person.', id='ID of the person'),
    tool(
        'bitable_v1_appTableRecord_search',
        'Search records in a base table',
        app_token='Base token',
        table_id='Table ID',
    ),
    tool('XMLParser_parse', 'Parse an XML document into a tree of elements.', document='The XML text'),
    tool('HTTPRequestSend', 'Send an HTTP request and return the response.', url='Target URL', method='HTTP method'),
]

CHINESE = [
    tool('get_weather', '查询指定城市未来三天的天气预报', city='城市名称'),
    tool('send_email', '向指定的收件人发送电子邮件', to='收件人地址', body='邮件正文'),
    tool('create_invoice', '为客户创建一张新的发票', customer='客户编号'),
    tool('list_orders', '列出用户最近的所有订单', user='用户编号'),
]

JAPANESE = [
    tool('translate_text', 'テキストを指定した言語に翻訳します', text='翻訳するテキスト'),
    tool('book_hotel', '指定した日付でホテルの部屋を予約します', date='宿泊日'),
    tool('get_stock_price', '株価の最新情報を取得します', symbol='銘柄コード'),
    tool('search_news', '最新のニュース記事をキーワードで検索します', keyword='検索キーワード'),
]

INTERNATIONAL = [
    tool('get_report', 'Получить отчёт по клиенту за выбранный период', client='Идентификатор клиента'),
    tool('order_coffee', 'Đặt một ly cà phê sữa đá mang về', size='Cỡ ly'),
    tool('find_street', 'Sucht eine Straße in der angegebenen Stadt', stadt='Name der Stadt'),
    tool('find_restaurant', 'Find a restaurant near a location', location='City or address'),
    tool('ferry_times', 'İstanbul vapur saatleri: İskele ve sefer bilgisi', pier='İskele adı'),
]


def proxy(**groups: list[Tool[Any]]) -> ToolProxyCapability[Any]:
    return ToolProxyCapability(
        groups={
            name: ToolProxyGroup(source=FunctionToolset(tools), description=f'{name} tools')
            for name, tools in groups.items()
        },
        config=ToolProxyConfig(max_results=20),
    )


async def search(capability: ToolProxyCapability[Any], queries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run one Agent whose scripted model calls `search_proxy_tools` once per query; return the pages."""
    script = Script([[(SEARCH, {'limit': 10, **query})] for query in queries] + ['done'])
    result = await Agent(script.model, capabilities=[capability]).run('find tools')
    pages = [page_of(part) for part in returns(result.all_messages()) if part.tool_name == SEARCH]
    assert len(pages) == len(queries)
    return pages


def names(page: dict[str, Any]) -> list[str]:
    return [entry['tool'] for entry in page['tools']]


async def test_github_prefix_does_not_hide_the_specific_tool() -> None:
    queries = ['github profile', 'get me', 'me', 'GitHub merge pull request', 'github', 'comment']
    profile, get_me, me, merge, github, comment = await search(proxy(github=GITHUB), [{'query': q} for q in queries])
    assert names(profile)[0] == 'github_get_me'
    assert profile['total'] == 15  # `github` is in every name and the group, yet the profile tool leads
    assert names(get_me)[0] == 'github_get_me'
    # `me` is a whole word: it matches `github_get_me`, never the `me` inside "comment".
    assert names(me) == ['github_get_me'] and me['total'] == 1
    assert names(merge)[0] == 'github_merge_pull_request'
    assert github['total'] == 15
    assert set(names(comment)) == {'github_add_comment_to_pending_review', 'github_add_issue_comment'}


async def test_identifiers_split_at_case_and_separators() -> None:
    queries = [
        'add person',
        'AddPerson',
        'table record',
        'xml parser',
        'http request',
        'person details',
        'send request',
    ]
    pages = await search(proxy(work=WORK), [{'query': q} for q in queries])
    expected = [
        'addPerson',
        'addPerson',
        'bitable_v1_appTableRecord_search',
        'XMLParser_parse',
        'HTTPRequestSend',
        'getPersonDetails',
        'HTTPRequestSend',
    ]
    assert [names(page)[0] for page in pages] == expected
    # `AddPerson` is an exact name (any case): first, and other tools sharing its words still follow.
    assert pages[1]['total'] > 1


async def test_exact_name_local_or_canonical_any_case_ranks_first() -> None:
    queries = ['HTTPREQUESTSEND', 'work__xmlparser_parse', ' getpersondetails ', 'WORK__ADDDEAL']
    pages = await search(proxy(work=WORK, github=GITHUB), [{'query': q} for q in queries])
    assert [names(page)[0] for page in pages] == ['HTTPRequestSend', 'XMLParser_parse', 'getPersonDetails', 'addDeal']


@pytest.mark.parametrize(
    ('query', 'expected'),
    [
        ('天气', 'get_weather'),
        ('发票', 'create_invoice'),
        ('订单', 'list_orders'),
        ('电子邮件', 'send_email'),
        ('ホテル', 'book_hotel'),
        ('翻訳', 'translate_text'),
        ('株価', 'get_stock_price'),
        ('予約', 'book_hotel'),
        ('ニュース', 'search_news'),
    ],
)
async def test_scripts_without_spaces_match_words_inside_descriptions(query: str, expected: str) -> None:
    (page,) = await search(proxy(zh=CHINESE, ja=JAPANESE), [{'query': query}])
    assert names(page)[0] == expected


async def test_cyrillic_vietnamese_german_turkish_fullwidth_and_inflections_match_case_insensitively() -> None:
    queries = [
        'ОТЧЁТ клиенту',
        'CÀ PHÊ SỮA',
        unicodedata.normalize('NFD', 'cà phê'),
        'STRASSE',
        'straße',
        'restaurants nearby',
        'istanbul iskele',
        'İSTANBUL',
        'ＲＥＳＴＡＵＲＡＮＴ ｎｅａｒ',
    ]
    pages = await search(proxy(intl=INTERNATIONAL), [{'query': q} for q in queries])
    assert [names(page)[0] for page in pages] == [
        'get_report',
        'order_coffee',
        'order_coffee',
        'find_street',
        'find_street',
        'find_restaurant',
        'ferry_times',
        'ferry_times',
        'find_restaurant',
    ]
    # Diacritics stay inside words: "ca phe" is other words than "cà phê".
    (plain,) = await search(proxy(intl=INTERNATIONAL), [{'query': 'ca phe'}])
    assert plain == {'tools': [], 'total': 0, 'next_offset': None}


async def test_query_matching_nothing_is_an_empty_page() -> None:
    pages = await search(
        proxy(github=GITHUB, work=WORK), [{'query': 'zebra quantum'}, {'query': 'zebra', 'group': 'work'}]
    )
    assert pages == [{'tools': [], 'total': 0, 'next_offset': None}] * 2


async def test_ties_break_by_group_then_tool_in_every_run() -> None:
    same = [tool('beta', 'Fetch the weather forecast'), tool('alpha', 'Fetch the weather forecast')]
    capability = proxy(zeta=same, alpha=list(same), mid=list(same))
    first = await search(capability, [{'query': 'weather forecast'}] * 2)
    again = await search(capability, [{'query': 'weather forecast'}])
    order = [(entry['group'], entry['tool']) for entry in first[0]['tools']]
    assert order == [(g, t) for g in ('alpha', 'mid', 'zeta') for t in ('alpha', 'beta')]
    assert first[0] == first[1] == again[0]


def test_core_records_as_the_directory_builds_them_search_enum_values_and_parameters() -> None:
    index = _core.SearchIndex()
    schema = {'type': 'object', 'properties': {'unit': {'type': 'string', 'enum': ['celsius', 'fahrenheit']}}}
    index.upsert(
        [
            ('weather__get_current', 'weather', 'get_current', 'Current conditions for a city', schema),
            (
                'weather__get_history',
                'weather',
                'get_history',
                'Past conditions for a city',
                {'type': 'object', 'properties': {'date': {'type': 'string', 'description': 'Day of interest'}}},
            ),
        ]
    )
    assert index.search('fahrenheit', None, 0, 10) == (1, ['weather__get_current'])
    assert index.search('unit', None, 0, 10) == (1, ['weather__get_current'])
    assert index.search('day', None, 0, 10) == (1, ['weather__get_history'])
    # Group names are indexed text (with a small weight).
    assert index.search('weather', None, 0, 10)[0] == 2


def test_bfcl_quality_floor() -> None:
    """The Rust ranking on the issue's BFCL corpus (1,582 tools, 2,501 questions) keeps its targets."""
    pytest.importorskip('bfcl_eval')
    from bench.lib.corpus import load_questions, load_tools
    from bench.lib.metrics import first_rank, scores
    from bench.lib.rankers import ToolProxyRanker

    tools, questions = load_tools(), load_questions()
    assert (len(tools), len(questions)) == (1582, 2501)
    ranker = ToolProxyRanker(tools)
    result = scores([first_rank(question, ranker.rank(question.query, 10)) for question in questions])
    assert result.recall_1 >= 0.63 and result.recall_5 >= 0.86 and result.mrr_10 >= 0.75, result
