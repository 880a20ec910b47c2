from django.urls import path

from django_project import views

urlpatterns = [
    path("orders/", views.create_order),
    path("tasks/<str:result_id>/", views.task_status),
    path("async/orders/", views.create_order_async),
    path("traced/", views.traced_hop),
]
