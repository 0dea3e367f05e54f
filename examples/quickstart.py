"""Offline quickstart: a scripted model finds a grouped tool with search_proxy_tools, then runs it with call_proxy_tool."""

from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_toolproxy import ToolProxyCapability, ToolProxyGroup


def customer_name(customer_id: int) -> str:
    """Look up the display name for a customer ID."""
    return {42: 'Ada'}.get(customer_id, 'Unknown')


def model(messages, info: AgentInfo) -> ModelResponse:  # plays the LLM: search, call, answer
    if len(messages) == 1:  # the user's prompt only
        print('the model is offered:', [t.name for t in info.function_tools])
        return ModelResponse(parts=[ToolCallPart('search_proxy_tools', {'query': 'customer name'})])
    result = messages[-1].parts[-1].content  # the last tool's return
    if len(messages) == 3:  # the search page: {"tools": [...], "total": N, "next_offset": K | null}
        print('search found:', [(t['group'], t['tool']) for t in result['tools']], 'total', result['total'])
        args = {'group': 'crm', 'tool': 'customer_name', 'arguments': {'customer_id': 42}}
        return ModelResponse(parts=[ToolCallPart('call_proxy_tool', args)])
    print('call returned:', result)
    return ModelResponse(parts=[TextPart(f'Customer 42 is {result}.')])


crm = FunctionToolset([customer_name])
proxy = ToolProxyCapability(groups={'crm': ToolProxyGroup(source=crm, description='Customer records')})
agent = Agent(FunctionModel(model), capabilities=[proxy])
print(agent.run_sync('Who is customer 42?').output)
